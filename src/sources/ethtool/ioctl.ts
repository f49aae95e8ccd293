/**
 * SIOCETHTOOL through koffi: one ioctl on an AF_INET datagram socket, as ethtool(8) does.
 *
 * The command buffer lives in memory from koffi.alloc() (it does not move while the kernel
 * writes it) and its address goes into struct ifreq's ifr_data. The kernel writes as many
 * strings or values as the driver has *now* (net/ethtool/ioctl.c ethtool_get_strings() and
 * ethtool_get_stats() use their own count, not the caller's), so a set that grew between the
 * count and the read would overrun a buffer of the asked size: the native buffer is twice the
 * asked size plus 4 KiB, and decodeGstats() reports a changed count.
 */
import { IFNAMSIZ, IFREQ_BYTES, IFREQ_DATA_AT, SIOCETHTOOL } from './constants.js';
import { type Koffi, type KoffiLibrary, NativeLoadError, asInt, errorText, loadKoffi, loadLibc, type Libc } from '../../ffi/libc.js';
import { endianness } from 'node:os';

const LE = endianness() === 'LE';
const AF_INET = 2;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;

/** The kernel's answer to one command: errno 0 and the buffer as it wrote it, or an errno. */
export type EthtoolReply = { readonly errno: 0; readonly data: Uint8Array } | { readonly errno: number };

/** What the reader needs: tests replay captured answers through the same interface. */
export interface EthtoolTransport {
  request(ifname: string, command: Uint8Array): EthtoolReply;
  close(): void;
}

export type EthtoolOpenResult = { readonly ok: true; readonly transport: IoctlTransport } | { readonly ok: false; readonly error: string };

type IoctlFn = (fd: number, request: number, type: string, arg: Uint8Array) => unknown;

export class IoctlTransport implements EthtoolTransport {
  private closed = false;

  private constructor(
    private readonly koffi: Koffi,
    private readonly libc: Libc,
    private readonly ioctl: IoctlFn,
    private readonly fd: number,
  ) {}

  static open(): EthtoolOpenResult {
    let koffi: Koffi;
    let libc: Libc;
    let lib: KoffiLibrary;
    try {
      koffi = loadKoffi();
      libc = loadLibc();
      lib = koffi.load('libc.so.6');
    } catch (e) {
      return { ok: false, error: e instanceof NativeLoadError ? e.message : errorText(e) };
    }
    const ioctl = lib.func('int ioctl(int fd, unsigned long request, ...)') as unknown as IoctlFn;
    const fd = libc.socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return { ok: false, error: `socket(AF_INET, SOCK_DGRAM) failed with errno ${libc.errno()}` };
    return { ok: true, transport: new IoctlTransport(koffi, libc, ioctl, fd) };
  }

  request(ifname: string, command: Uint8Array): EthtoolReply {
    if (this.closed) return { errno: 9 }; // EBADF
    const name = new TextEncoder().encode(ifname);
    if (name.length >= IFNAMSIZ || name.includes(0)) return { errno: 19 }; // ENODEV: no such name can exist
    const size = command.length * 2 + 4096;
    const mem = this.koffi.alloc('uint8_t', size);
    try {
      const native = new Uint8Array(this.koffi.view(mem, size));
      native.set(command);
      const ifr = new Uint8Array(IFREQ_BYTES);
      ifr.set(name);
      new DataView(ifr.buffer).setBigUint64(IFREQ_DATA_AT, this.koffi.address(mem), LE);
      const rc = asInt(this.ioctl(this.fd, SIOCETHTOOL, 'void *', ifr), 'ioctl');
      if (rc < 0) return { errno: this.libc.errno() || 5 };
      return { errno: 0, data: native.slice(0, command.length) };
    } finally {
      this.koffi.free(mem);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.libc.close(this.fd);
  }
}
