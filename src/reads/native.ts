/**
 * libmfe-reader (native/reader) through koffi: reader threads of our own that run a request's
 * ops and say through a pipe when they are done. Every call here returns at once; waiting
 * happens on the event loop (the pipe is a net.Socket) and never on a thread Node needs.
 */
import { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { type KoffiLibrary, NativeLoadError, asInt, errorText, loadKoffi } from '../ffi/libc.js';
import { ERRNO } from '../ffi/errno.js';

/** Built by `npm run build` (make -C native reader); the same path from src/ and dist/. */
export const READER_LIBRARY = fileURLToPath(new URL('../../native/build/libmfe-reader.so', import.meta.url));
const ABI_VERSION = 3;

/** mfe-reader.h enum mfr_state, and abandoned (the caller gave the batch up). */
export type BatchState = 'running' | 'done' | 'crashed';
const STATES: Record<number, BatchState> = { 1: 'running', 2: 'done', 3: 'crashed' };

/** mfe-reader.h enum mfr_event. */
export type ReaderEvent = 'done' | 'crashed' | 'returned' | 'lost';
const EVENTS: Record<number, ReaderEvent> = { 1: 'done', 2: 'crashed', 3: 'returned', 4: 'lost' };

export interface ReaderThreadStats {
  /** Threads not given up: idle or running a batch. */
  readonly live: number;
  readonly idle: number;
  /** Given-up threads still inside a call. */
  readonly blocked: number;
  readonly started: number;
  /** Threads that died (cancelled) instead of stopping. */
  readonly lost: number;
  readonly maxThreads: number;
}

type Fn = (...args: unknown[]) => unknown;

interface Binding {
  readonly open: Fn;
  readonly notifyFd: Fn;
  readonly submit: Fn;
  readonly poll: Fn;
  readonly collect: Fn;
  readonly abandon: Fn;
  readonly stats: Fn;
  readonly close: Fn;
  readonly testKillIdle: Fn;
  readonly runSync: Fn;
  readonly verbsClose: Fn;
}

const bindings = new Map<string, Binding | NativeLoadError>();

function bind(file: string): Binding {
  let b = bindings.get(file);
  if (b === undefined) {
    try {
      const koffi = loadKoffi();
      const lib: KoffiLibrary = koffi.load(file);
      const version = asInt(lib.func('uint32_t mfr_abi_version(void)')(), 'mfr_abi_version');
      if (version !== ABI_VERSION) throw new Error(`ABI version ${version}, expected ${ABI_VERSION}: rebuild with npm run build`);
      b = {
        open: lib.func('void *mfr_open(uint32_t max_threads)'),
        notifyFd: lib.func('int mfr_notify_fd(void *r)'),
        submit: lib.func('int64_t mfr_submit(void *r, const uint8_t *request, uint32_t len, uint32_t n)'),
        poll: lib.func('int mfr_poll(void *r, uint64_t id, void *done, void *idle_ns)'),
        collect: lib.func('int64_t mfr_collect(void *r, uint64_t id, void *out, uint64_t len)'),
        abandon: lib.func('int mfr_abandon(void *r, uint64_t id, void *out, uint64_t len, void *stuck_at)'),
        stats: lib.func('void mfr_stats(void *r, void *out)'),
        close: lib.func('void mfr_close(void *r)'),
        testKillIdle: lib.func('int mfr_test_kill_idle(void *r)'),
        runSync: lib.func('int64_t mfr_run_sync(const uint8_t *request, uint32_t len, uint32_t n, void *out, uint64_t out_len)'),
        verbsClose: lib.func('int mfr_verbs_close(uint32_t handle)'),
      };
    } catch (e) {
      b = e instanceof NativeLoadError ? e : new NativeLoadError(file, errorText(e));
    }
    bindings.set(file, b);
  }
  if (b instanceof NativeLoadError) throw b;
  return b;
}

/**
 * A request run on this thread by the library's own op code (the direct executor's libibverbs
 * ops, so that they are written once, in C): bytes written to `out` (8-aligned), or -errno.
 * Throws NativeLoadError without the library.
 */
export function runOnThisThread(request: Buffer, ops: number, out: Buffer, library = READER_LIBRARY): number {
  return asInt(bind(library).runSync(request, request.length, ops, out, out.length), 'mfr_run_sync');
}

/**
 * Lets go of a device a verbsOpen op opened: closed now, or when the last query still using it
 * returns (a thread given up inside ibv_query_port). 0, or -EBADF for a handle not open.
 */
export function closeVerbsDevice(handle: number, library = READER_LIBRARY): number {
  return asInt(bind(library).verbsClose(handle), 'mfr_verbs_close');
}

export type Submitted = { readonly ok: true; readonly id: number } | { readonly ok: false; readonly errno: number };

export class ReaderThreads {
  private readonly socket: Socket;
  private closed = false;
  private carry = Buffer.alloc(0);
  private readonly u32 = new Uint32Array(1);
  private readonly u64 = new BigUint64Array(6);

  private constructor(
    private readonly b: Binding,
    private readonly handle: unknown,
    onEvent: (event: ReaderEvent, id: number) => void,
  ) {
    const fd = asInt(b.notifyFd(handle), 'mfr_notify_fd');
    this.socket = new Socket({ fd, readable: true, writable: false });
    this.socket.on('data', (chunk: Buffer) => this.receive(chunk, onEvent));
    this.socket.on('error', () => undefined);
    this.socket.unref();
  }

  /** Throws NativeLoadError when the library (or koffi) cannot be loaded. */
  static open(maxThreads: number, onEvent: (event: ReaderEvent, id: number) => void, library = READER_LIBRARY): ReaderThreads {
    const b = bind(library);
    const handle = b.open(maxThreads);
    if (handle === null || handle === undefined) throw new NativeLoadError(library, 'mfr_open failed (no memory or no pipe)');
    return new ReaderThreads(b, handle, onEvent);
  }

  /** While a batch runs the pipe keeps the process alive; idle, it does not. */
  hold(on: boolean): void {
    if (this.closed) return;
    if (on) this.socket.ref();
    else this.socket.unref();
  }

  // After close() no call reaches the library: mfr_close frees the reader once its last thread
  // goes, which may be at once, and a call on it then is a use after free (a SIGINT that came
  // while a batch's event was on its way collected it from freed memory: node segfaulted).

  submit(request: Buffer, ops: number): Submitted {
    if (this.closed) return { ok: false, errno: ERRNO.EBADF };
    const n = asInt(this.b.submit(this.handle, request, request.length, ops), 'mfr_submit');
    return n > 0 ? { ok: true, id: n } : { ok: false, errno: -n };
  }

  poll(id: number): { readonly state: BatchState; readonly done: number; readonly idleMs: number } | undefined {
    if (this.closed) return undefined;
    const idle = new BigUint64Array(1);
    const s = asInt(this.b.poll(this.handle, id, this.u32, idle), 'mfr_poll');
    const state = STATES[s];
    return state === undefined ? undefined : { state, done: this.u32[0]!, idleMs: Number(idle[0]!) / 1e6 };
  }

  /** Results into `out`; negative errno on failure. */
  collect(id: number, out: Buffer): number {
    if (this.closed) return -ERRNO.EBADF;
    return asInt(this.b.collect(this.handle, id, out, out.length), 'mfr_collect');
  }

  /** Gives the batch up: `stuckAt` is the op its thread is in; ended: it finished meanwhile (collected). */
  abandon(id: number, out: Buffer): { readonly kind: 'abandoned'; readonly stuckAt: number } | { readonly kind: 'ended'; readonly state: BatchState } | { readonly kind: 'error'; readonly errno: number } {
    if (this.closed) return { kind: 'error', errno: ERRNO.EBADF };
    const s = asInt(this.b.abandon(this.handle, id, out, out.length, this.u32), 'mfr_abandon');
    if (s < 0) return { kind: 'error', errno: -s };
    if (s === 1) return { kind: 'abandoned', stuckAt: this.u32[0]! };
    return { kind: 'ended', state: STATES[s] ?? 'done' };
  }

  stats(): ReaderThreadStats {
    if (this.closed) return { live: 0, idle: 0, blocked: 0, started: 0, lost: 0, maxThreads: 0 };
    this.b.stats(this.handle, this.u64);
    const [live, idle, blocked, started, lost, maxThreads] = [...this.u64].map(Number) as [number, number, number, number, number, number];
    return { live, idle, blocked, started, lost, maxThreads };
  }

  /** Tests: one idle thread dies as if it had crashed. */
  killIdleThreadForTest(): boolean {
    if (this.closed) return false;
    return asInt(this.b.testKillIdle(this.handle), 'mfr_test_kill_idle') === 0;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.b.close(this.handle);
    this.socket.destroy();
  }

  private receive(chunk: Buffer, onEvent: (event: ReaderEvent, id: number) => void): void {
    const data = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk;
    let at = 0;
    for (; at + 16 <= data.length; at += 16) {
      const event = EVENTS[data.readUInt32LE(at + 8)];
      if (event) onEvent(event, Number(data.readBigUInt64LE(at)));
    }
    this.carry = Buffer.from(data.subarray(at));
  }
}
