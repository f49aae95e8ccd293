/**
 * Why a read has no value, as data: code reads `.code` (an errno name, or a project word for what
 * no errno names), `.op` and `.path`; people read readErrorText(), the one rendering, which reads
 * as the prefixed strings logs, the landing page and the CLI have always shown
 * (`ENOENT: read '/sys/...'`).
 */
import { errnoName } from '../ffi/errno.js';

/**
 * Failures no errno names. Their text is the detail alone, without a code prefix:
 * THREW a program threw (a bug), TOOLARGE a file over its cap, CHANGED a file that grew while
 * it was read, CLOSED a set read after close, NOTACOUNTER a counter file whose text is no number,
 * UNLISTED a directory listing that did not decode, SOURCE a counter source's own failure whose
 * message says it all (an ethtool ioctl, an RDMA netlink request).
 */
type ProjectCode = 'THREW' | 'TOOLARGE' | 'CHANGED' | 'CLOSED' | 'NOTACOUNTER' | 'UNLISTED' | 'SOURCE';
const PROJECT_CODES: ReadonlySet<string> = new Set<ProjectCode>(['THREW', 'TOOLARGE', 'CHANGED', 'CLOSED', 'NOTACOUNTER', 'UNLISTED', 'SOURCE']);

export interface ReadError {
  /** `ENOENT`, `ETIMEDOUT`... (errnoName), or a ProjectCode. */
  readonly code: string;
  /** What was being done: 'read', 'open', 'stat', 'scandir', 'submit', 'run'... */
  readonly op: string;
  readonly path?: string;
  /** The words after the code, where the op and path alone do not say what happened. */
  readonly detail?: string;
}

/** A ReadError for a failed op's status (-errno). */
export function statusError(status: number, op: string, path?: string): ReadError {
  return path === undefined ? { code: errnoName(-status), op } : { code: errnoName(-status), op, path };
}

/** `CODE: op 'path'`, or `CODE: detail`; a project word's detail alone. */
export function readErrorText(e: ReadError): string {
  const phrase = e.detail ?? (e.path === undefined ? e.op : `${e.op} '${e.path}'`);
  return PROJECT_CODES.has(e.code) ? phrase : `${e.code}: ${phrase}`;
}
