/**
 * errno numbers and names, one way for the whole tree: Node's os.constants.errno (the platform's
 * <errno.h>). An errno is positive here, as in C; a read op's status is -errno (src/reads/ops.ts
 * statusName()).
 */
import { constants } from 'node:os';
import { getSystemErrorMap } from 'node:util';

export const ERRNO = constants.errno;

/**
 * Where <errno.h> has two names for one number, Linux's own: include/uapi/asm-generic/errno.h
 * defines EWOULDBLOCK as EAGAIN, and glibc's ENOTSUP is EOPNOTSUPP.
 */
const PREFERRED = new Set(['EAGAIN', 'EOPNOTSUPP']);
const NAMES = new Map<number, string>();
for (const [name, n] of Object.entries(ERRNO)) if (!NAMES.has(n) || PREFERRED.has(name)) NAMES.set(n, name);

/** `ENOENT`... for an errno; `errno N` for one the platform does not name. */
export function errnoName(errno: number): string {
  return NAMES.get(errno) ?? `errno ${errno}`;
}

const MESSAGES = getSystemErrorMap();

/** `no such file or directory (ENOENT)`: libuv's text for an errno, with its name. */
export function errnoText(errno: number): string {
  const message = MESSAGES.get(-errno)?.[1];
  return message === undefined ? errnoName(errno) : `${message} (${errnoName(errno)})`;
}
