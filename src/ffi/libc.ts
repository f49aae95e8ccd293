/**
 * koffi, loaded lazily, and the few libc calls the native sources need.
 *
 * koffi is required on first use rather than imported, so a platform without its prebuilt
 * binary, or a host that never asks for native sources, pays nothing and cannot crash at
 * import time. koffi 3 passes pointers as BigInt and Buffers as pointers to their bytes.
 */
import { endianness } from 'node:os';
import { createRequire } from 'node:module';

export type Koffi = typeof import('koffi').default;
export type KoffiLibrary = ReturnType<Koffi['load']>;
type KoffiFn = ReturnType<KoffiLibrary['func']>;

export class NativeLoadError extends Error {
  override readonly name = 'NativeLoadError';
  constructor(
    readonly what: string,
    readonly detail: string,
  ) {
    super(`cannot load ${what}: ${detail}`);
  }
}

let koffiCache: Koffi | NativeLoadError | undefined;

export function loadKoffi(): Koffi {
  if (koffiCache === undefined) {
    try {
      koffiCache = createRequire(import.meta.url)('koffi') as Koffi;
    } catch (e) {
      koffiCache = new NativeLoadError('koffi', errorText(e));
    }
  }
  if (koffiCache instanceof NativeLoadError) throw koffiCache;
  return koffiCache;
}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function asInt(v: unknown, what: string): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  throw new TypeError(`${what} returned ${typeof v}, expected a number`);
}

/** koffi 3 returns pointers as bigint and NULL as null. */
function asPointer(v: unknown, what: string): bigint | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return v === 0n ? null : v;
  if (typeof v === 'number') return v === 0 ? null : BigInt(v);
  throw new TypeError(`${what} returned ${typeof v}, expected a pointer`);
}

export interface Libc {
  socket(domain: number, type: number, protocol: number): number;
  bind(fd: number, addr: Uint8Array): number;
  setsockopt(fd: number, level: number, name: number, value: Uint8Array): number;
  sendto(fd: number, buf: Uint8Array, flags: number, addr: Uint8Array): number;
  /** send(2) with MSG_NOSIGNAL on a connected socket. */
  send(fd: number, buf: Uint8Array): number;
  connect(fd: number, addr: Uint8Array): number;
  recv(fd: number, buf: Uint8Array, flags: number): number;
  close(fd: number): number;
  /** Name of an interface index in this network namespace, or undefined. */
  ifIndexToName(ifindex: number): string | undefined;
  /**
   * ioctl(fd, request, buf) on native memory that stays put while the kernel uses it: `buf` is
   * copied there and back. `pointer` first stores the native address of buf[to] at buf[at]
   * (struct ifreq's ifr_data pointing at the command that follows it). The result, or -errno.
   */
  ioctlBuffer(fd: number, request: number, buf: Uint8Array, pointer?: { readonly at: number; readonly to: number }): number;
  /** errno left by the last call through koffi. */
  errno(): number;
}

let libcCache: Libc | undefined;
let libcLibraryCache: KoffiLibrary | undefined;

/** libc.so.6 as koffi loaded it, once for every binding (this file's and memory.ts's allocator calls). */
export function libcLibrary(): KoffiLibrary {
  if (libcLibraryCache !== undefined) return libcLibraryCache;
  const koffi = loadKoffi();
  try {
    libcLibraryCache = koffi.load('libc.so.6');
  } catch (e) {
    throw new NativeLoadError('libc.so.6', errorText(e));
  }
  return libcLibraryCache;
}

export function loadLibc(): Libc {
  if (libcCache !== undefined) return libcCache;
  libcCache = bindLibc(loadKoffi(), libcLibrary());
  return libcCache;
}

function bindLibc(koffi: Koffi, lib: KoffiLibrary): Libc {
  const fn = (proto: string): KoffiFn => lib.func(proto);
  const socket = fn('int socket(int domain, int type, int protocol)');
  const bind = fn('int bind(int fd, void *addr, uint32_t addrlen)');
  const setsockopt = fn('int setsockopt(int fd, int level, int name, void *value, uint32_t len)');
  const sendto = fn('intptr_t sendto(int fd, void *buf, size_t len, int flags, void *addr, uint32_t addrlen)');
  const recv = fn('intptr_t recv(int fd, void *buf, size_t len, int flags)');
  const send = fn('intptr_t send(int fd, void *buf, size_t len, int flags)');
  const connect = fn('int connect(int fd, void *addr, uint32_t addrlen)');
  const close = fn('int close(int fd)');
  const ifIndexToName = fn('void *if_indextoname(uint32_t ifindex, void *name)');
  const ioctl = fn('int ioctl(int fd, unsigned long request, ...)');
  return {
    socket: (d, t, p) => asInt(socket(d, t, p), 'socket'),
    bind: (fd, addr) => asInt(bind(fd, addr, addr.length), 'bind'),
    setsockopt: (fd, level, name, v) => asInt(setsockopt(fd, level, name, v, v.length), 'setsockopt'),
    sendto: (fd, buf, flags, addr) => asInt(sendto(fd, buf, buf.length, flags, addr, addr.length), 'sendto'),
    recv: (fd, buf, flags) => asInt(recv(fd, buf, buf.length, flags), 'recv'),
    // MSG_NOSIGNAL (0x4000, <sys/socket.h>): a closed peer is an error, not SIGPIPE.
    send: (fd, buf) => asInt(send(fd, buf, buf.length, 0x4000), 'send'),
    connect: (fd, addr) => asInt(connect(fd, addr, addr.length), 'connect'),
    close: (fd) => asInt(close(fd), 'close'),
    ifIndexToName: (ifindex) => {
      // IF_NAMESIZE is 16 (net/if.h).
      const name = Buffer.alloc(16);
      if (asPointer(ifIndexToName(ifindex, name), 'if_indextoname') === null) return undefined;
      const nul = name.indexOf(0);
      return name.subarray(0, nul < 0 ? name.length : nul).toString('utf8');
    },
    ioctlBuffer: (fd, request, buf, pointer) => {
      const mem: unknown = koffi.alloc('uint8_t', Math.max(buf.length, 8));
      try {
        const native = new Uint8Array(koffi.view(mem, buf.length));
        native.set(buf);
        if (pointer) {
          const at = new DataView(native.buffer, native.byteOffset + pointer.at, 8);
          at.setBigUint64(0, koffi.address(mem) + BigInt(pointer.to), endianness() === 'LE');
        }
        const rc = asInt(ioctl(fd, request, 'void *', mem), 'ioctl');
        if (rc < 0) return -(koffi.errno() || 5); // EIO: a failure without an errno
        buf.set(native);
        return rc;
      } finally {
        koffi.free(mem);
      }
    },
    errno: () => koffi.errno(),
  };
}
