/**
 * SIOCETHTOOL as a read op: one ioctl on an AF_INET datagram socket, as ethtool(8) does, run
 * by the read primitive (src/reads: an `ioctl` op on a bounded reader thread, or on the
 * caller's thread through runSync()).
 *
 * The op's buffer is struct ifreq followed by the command; the reader stores the address of
 * the command in ifr_data just before the call, in memory that does not move while the kernel
 * writes it. The kernel writes as many strings or values as the driver has *now*
 * (net/ethtool/ioctl.c ethtool_get_strings() and ethtool_get_stats() use their own count, not
 * the caller's), so a set that grew between the count and the read would overrun a buffer of
 * the asked size: the room after the command is twice its size plus 4 KiB, and decodeGstats()
 * reports a changed count.
 */
import { IFNAMSIZ, IFREQ_BYTES, IFREQ_DATA_AT, SIOCETHTOOL } from './constants.js';
import { NativeLoadError, errorText, loadLibc, type Libc } from '../../ffi/libc.js';
import { type ReadProgram, read } from '../../reads/program.js';
import { ERRNO } from '../../ffi/errno.js';

const AF_INET = 2;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;
const EBADF = ERRNO.EBADF;
const ENODEV = ERRNO.ENODEV;

/** The kernel's answer to one command: errno 0 and the buffer as it wrote it, or an errno. */
export type EthtoolReply = { readonly errno: 0; readonly data: Uint8Array } | { readonly errno: number };

/** What the reader needs: tests replay captured answers through the same interface. */
export interface EthtoolTransport {
  /** One command as a read program (the ioctl on the bounded reader, or here with runSync()). */
  requestReads(ifname: string, command: Uint8Array): ReadProgram<EthtoolReply>;
  close(): void;
}

export type EthtoolOpenResult = { readonly ok: true; readonly transport: IoctlTransport } | { readonly ok: false; readonly error: string };

export class IoctlTransport implements EthtoolTransport {
  private closed = false;

  private constructor(
    private readonly libc: Libc,
    private readonly fd: number,
  ) {}

  static open(): EthtoolOpenResult {
    let libc: Libc;
    try {
      libc = loadLibc();
    } catch (e) {
      return { ok: false, error: e instanceof NativeLoadError ? e.message : errorText(e) };
    }
    const fd = libc.socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return { ok: false, error: `socket(AF_INET, SOCK_DGRAM) failed with errno ${libc.errno()}` };
    return { ok: true, transport: new IoctlTransport(libc, fd) };
  }

  *requestReads(ifname: string, command: Uint8Array): ReadProgram<EthtoolReply> {
    if (this.closed) return { errno: EBADF };
    const name = new TextEncoder().encode(ifname);
    if (name.length >= IFNAMSIZ || name.includes(0)) return { errno: ENODEV }; // no such name can exist
    const arg = new Uint8Array(IFREQ_BYTES + command.length);
    arg.set(name);
    arg.set(command, IFREQ_BYTES);
    const r = yield* read([{
      kind: 'ioctl', fd: this.fd, request: SIOCETHTOOL, arg, max: IFREQ_BYTES + command.length * 2 + 4096,
      pointer: { at: IFREQ_DATA_AT, to: IFREQ_BYTES },
    }]);
    if (!r.ok(0)) return { errno: -r.status(0) };
    const out = r.bytes(0);
    return { errno: 0, data: Uint8Array.prototype.slice.call(out, IFREQ_BYTES, IFREQ_BYTES + command.length) };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.libc.close(this.fd);
  }
}
