export * from './constants.js';
export * from './codec.js';
export * from './rdma.js';
export * from './counters.js';
export {
  NetlinkUnavailable,
  NetlinkRequestError,
  NetlinkSocket,
  classifySocketErrno,
  type NetlinkAnswer,
} from './socket.js';
export * from './source.js';
export { errnoName } from '../../ffi/errno.js';
export * from './restrack.js';
