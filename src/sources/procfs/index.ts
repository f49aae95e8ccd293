/**
 * The process side of the connections source (issue #21): who a restrack pid is and which MXL
 * flows it maps, as read programs over /proc (a parameter, so fixture trees stand in for it).
 * README.md beside this file says what is read and which capability each read needs.
 */
export {
  DEFAULT_PROC_ROOT,
  mappedFlowsReads,
  processAgainReads,
  processExitReads,
  processReads,
  reasonOf,
  sameProcess,
  type ExitRead,
  type MappedFlowsRead,
  type ProcessInfo,
  type ProcessRead,
} from './reads.js';
export {
  parseCgroup,
  parseCmdline,
  parseComm,
  parseMaps,
  parseStartTicks,
  parseTaskState,
  parseTgid,
} from './parse.js';
