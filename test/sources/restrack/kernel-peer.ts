/**
 * A stand-in for the kernel's end of a NETLINK_RDMA socket: an AF_UNIX datagram socketpair.
 * The exporter's end is adopted as an NetlinkSocket; recorded answers are queued on the other
 * end before the read, so the reader's real netlinkTransact op sends its request (which nobody
 * reads) and receives them datagram by datagram, to NLMSG_DONE, as from the kernel. A socketpair
 * peer has no queue-length limit (net/unix/af_unix.c unix_dgram_sendmsg skips the check when the
 * receiver's peer is the sender), and recv(MSG_TRUNC) returns a datagram's full length as netlink does.
 */
import { readFileSync } from 'node:fs';
import { loadKoffi, loadLibc } from '../../../src/ffi/libc.js';
import { NetlinkSocket } from '../../../src/sources/netlink/index.js';

const AF_UNIX = 1;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;

/** Datagrams of a restrack fixture (test/fixtures/netlink/gen_restrack.py): one hex line each. */
export function datagrams(name: string): Uint8Array[] {
  const text = readFileSync(new URL(`../../fixtures/netlink/${name}`, import.meta.url), 'utf8');
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => Uint8Array.from(Buffer.from(l.trim(), 'hex')));
}

/** The datagrams with every message's nlmsg_seq set to `seq`. */
export function withSeq(dgs: readonly Uint8Array[], seq: number): Uint8Array[] {
  return dgs.map((d) => {
    const b = Buffer.from(d);
    for (let at = 0; at + 16 <= b.length; at += (b.readUInt32LE(at) + 3) & ~3) b.writeUInt32LE(seq, at + 8);
    return new Uint8Array(b);
  });
}

export class KernelPeer {
  readonly socket: NetlinkSocket;
  private readonly peer: number;
  private closed = false;

  constructor(firstSeq: number) {
    const koffi = loadKoffi();
    const socketpair = koffi.load('libc.so.6').func('int socketpair(int domain, int type, int protocol, _Out_ int *sv)');
    const sv = [0, 0];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) !== 0) throw new Error('socketpair failed');
    this.socket = NetlinkSocket.adopt(sv[0]!, firstSeq);
    this.peer = sv[1]!;
  }

  /** Queues answers for the exporter's end to receive. */
  withoutReads(dgs: readonly Uint8Array[]): void {
    const libc = loadLibc();
    for (const d of dgs) if (libc.send(this.peer, d) !== d.length) throw new Error(`send failed: errno ${libc.errno()}`);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    loadLibc().close(this.peer);
    this.socket.close();
  }
}
