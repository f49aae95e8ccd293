/**
 * What the native sources (libibverbs, RDMA netlink) find on this host, as plain JSON.
 *
 * Used by the `devices` command and by the soft-RoCE guest test; run directly
 * (`node dist/sources/probe.js [--raw]`) it prints the probe. `--raw` adds the hex of each
 * STAT_GET answer, to capture fixtures from a real kernel.
 */
import { runsAsScript } from './script.js';
import { type PortAttributes, portKey } from './types.js';
import { NetlinkCounterSource, NetlinkRequestError, hex, netlinkCounterSpec } from './netlink/index.js';
import { gidTypeName, openVerbsReads } from './verbs/index.js';
import { runSync } from '../reads/program.js';

export interface GidProbe {
  readonly index: number;
  readonly gid: string;
  readonly type: string;
  /** Interface name of the GID's netdev (ndev_ifindex), if any. */
  readonly ndev: string | undefined;
}

export type VerbsPortProbe = PortAttributes & { readonly gids: GidProbe[] };

export type VerbsProbe =
  | { readonly available: true; readonly ports: VerbsPortProbe[]; readonly skipped: { device: string; error: string }[] }
  | { readonly available: false; readonly reason: string; readonly errno: number | undefined; readonly error: string };

export interface NetlinkPortProbe {
  readonly device: string;
  readonly port: number;
  readonly devIndex: number;
  /** Counter name -> decimal value (JSON has no u64). */
  readonly counters: Record<string, string>;
  /** Names the exporter maps to a model meaning, e.g. "sent_pkts": "tx packets". */
  readonly meanings: Record<string, string>;
  readonly rawHex?: string[];
}

export type NetlinkProbe =
  | {
      readonly available: true;
      readonly devices: { index: number; name: string; lastPort: number | undefined }[];
      readonly ports: NetlinkPortProbe[];
      readonly errors: string[];
    }
  | { readonly available: false; readonly reason: string; readonly errno: number | undefined; readonly error: string };

export interface NativeProbe {
  readonly verbs: VerbsProbe;
  readonly netlink: NetlinkProbe;
}

export interface ProbeOptions {
  /** Include the raw STAT_GET answers as hex. */
  readonly raw?: boolean;
}

export function probeVerbs(): VerbsProbe {
  const opened = runSync(openVerbsReads());
  if (!opened.ok) {
    const { reason, errno, message } = opened.error;
    return { available: false, reason, errno, error: message };
  }
  const inv = opened.inventory;
  try {
    const ports = runSync(inv.listReads()).flatMap((ref): VerbsPortProbe[] => {
      const attrs = runSync(inv.attributeReads(ref));
      if (attrs === undefined) return [];
      const gids = (runSync(inv.gidReads(ref)) ?? []).map((g) => ({
        index: g.gidIndex,
        gid: g.gidText,
        type: gidTypeName(g.gidType),
        ndev: g.ndevIfindex === 0 ? undefined : inv.ifName(g.ndevIfindex),
      }));
      return [{ ...attrs, gids }];
    });
    return { available: true, ports, skipped: [...inv.skipped] };
  } finally {
    inv.close();
  }
}

export function probeNetlink(options: ProbeOptions = {}): NetlinkProbe {
  const created = NetlinkCounterSource.create();
  if (!created.ok) {
    const { reason, errno, message } = created.error;
    return { available: false, reason, errno, error: message };
  }
  const source = created.source;
  const errors: string[] = [];
  try {
    const devices = runSync(source.listDeviceReads());
    const ports = devices.flatMap((d) => probeDevicePorts(source, d.index, d.name, d.lastPort ?? 0, errors, options));
    return { available: true, devices: devices.map((d) => ({ ...d })), ports, errors };
  } catch (e) {
    if (!(e instanceof NetlinkRequestError)) throw e;
    return { available: true, devices: [], ports: [], errors: [e.message] };
  } finally {
    source.close();
  }
}

function probeDevicePorts(
  source: NetlinkCounterSource,
  devIndex: number,
  device: string,
  lastPort: number,
  errors: string[],
  options: ProbeOptions,
): NetlinkPortProbe[] {
  const out: NetlinkPortProbe[] = [];
  for (let port = 1; port <= lastPort; port++) {
    try {
      const { reply, answer } = runSync(source.statGetReads(devIndex, port, portKey({ device, port })));
      const counters = Object.fromEntries(reply.counters.map((c) => [c.name, c.value.toString()]));
      const probe: NetlinkPortProbe = { device, port, devIndex, counters, meanings: meaningsOf(Object.keys(counters)) };
      out.push(options.raw === true ? { ...probe, rawHex: answer.raw.map(hex) } : probe);
    } catch (e) {
      if (!(e instanceof NetlinkRequestError)) throw e;
      errors.push(e.message);
    }
  }
  return out;
}

function meaningsOf(names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const m = netlinkCounterSpec(name).meaning;
    if (m !== undefined) out[name] = `${m.direction} ${m.quantity}${m.layer === undefined ? '' : ` (${m.layer})`}`;
  }
  return out;
}

export function probeNative(options: ProbeOptions = {}): NativeProbe {
  return { verbs: probeVerbs(), netlink: probeNetlink(options) };
}

if (runsAsScript(import.meta.url)) {
  const probe = probeNative({ raw: process.argv.includes('--raw') });
  process.stdout.write(`${JSON.stringify(probe, null, 2)}\n`);
}
