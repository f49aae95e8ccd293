export * from './constants.js';
export * from './codec.js';
export * from './rdma.js';
export * from './counters.js';
export {
  NetlinkUnavailable,
  NetlinkRequestError,
  RdmaNetlinkSocket,
  classifySocketErrno,
  errnoName,
  type NetlinkAnswer,
  type NetlinkUnavailableReason,
  type SocketOpenResult,
} from './socket.js';
export * from './source.js';
