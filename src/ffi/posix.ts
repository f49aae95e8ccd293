/** flock(2) and clock_gettime(2) through koffi, for MXL domain reads. */
import { NativeLoadError, errorText, loadKoffi, asInt } from './libc.js';
import { ERRNO } from './errno.js';

// <sys/file.h>: LOCK_SH 1, LOCK_EX 2, LOCK_NB 4, LOCK_UN 8. <time.h>: CLOCK_TAI 11.
const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;
const CLOCK_TAI = 11;
const EWOULDBLOCK = ERRNO.EWOULDBLOCK;

export interface Posix {
  /**
   * MXL's own writer test (FlowManager / Instance): a non-blocking exclusive flock on
   * `data` fails while a writer holds its shared lock. When it succeeds it is released at once.
   */
  writerHoldsLock(fd: number): boolean;
  /** CLOCK_TAI in nanoseconds: the clock MXL stamps lastWriteTime with. */
  taiNowNs(): bigint;
}

let cache: Posix | NativeLoadError | undefined;

export function loadPosix(): Posix {
  if (cache === undefined) cache = bind();
  if (cache instanceof NativeLoadError) throw cache;
  return cache;
}

function bind(): Posix | NativeLoadError {
  try {
    const koffi = loadKoffi();
    const lib = koffi.load('libc.so.6');
    koffi.struct('mfe_timespec', { tv_sec: 'int64_t', tv_nsec: 'long' });
    const flock = lib.func('int flock(int fd, int op)');
    const clockGettime = lib.func('int clock_gettime(int clk, _Out_ mfe_timespec *ts)');
    const errno = (): number => asInt(koffi.errno(), 'errno');
    return {
      writerHoldsLock(fd) {
        if (asInt(flock(fd, LOCK_EX | LOCK_NB), 'flock') === 0) {
          flock(fd, LOCK_UN);
          return false;
        }
        const e = errno();
        if (e === EWOULDBLOCK) return true;
        throw new Error(`flock(LOCK_EX|LOCK_NB) failed with errno ${e}`);
      },
      taiNowNs() {
        const ts = { tv_sec: 0n, tv_nsec: 0 } as { tv_sec: bigint | number; tv_nsec: bigint | number };
        if (asInt(clockGettime(CLOCK_TAI, ts), 'clock_gettime') !== 0) throw new Error(`clock_gettime(CLOCK_TAI) failed with errno ${errno()}`);
        return BigInt(ts.tv_sec) * 1_000_000_000n + BigInt(ts.tv_nsec);
      },
    };
  } catch (e) {
    return e instanceof NativeLoadError ? e : new NativeLoadError('libc flock/clock_gettime', errorText(e));
  }
}
