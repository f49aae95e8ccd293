/**
 * CounterSource over the RoCE port's netdev ethtool statistics (`ethtool -S`): the PFC, pause
 * and discard counters that live there and nowhere in sysfs. Only the names the vocabulary
 * knows are kept (src/sources/vocabulary); node_exporter's ethtool collector exports the rest.
 *
 * mlx5's get_ethtool_stats() queries firmware registers for every counter group on each call
 * (milliseconds on a ConnectX, per the brief; not measured here), so values are read at most
 * every `minPeriodMs` (default 5 s) and repeated in between: pause and discard rates are
 * judged over minutes. A VLAN netdev has no such statistics: its lower device is read.
 */
import { isKnownEthtoolStat } from '../vocabulary/index.js';
import { physicalNetdevReads } from '../netdev-links.js';
import { resolveRoot, type SysfsOptions } from '../sysfs/paths.js';
import { type CounterSource, type CounterSpec, type CounterValue, type PortAttributes, type PortCounterSet, type PortRef, type SetRead } from '../types.js';
import { type ReadProgram } from '../../reads/program.js';
import type { ReadError } from '../../reads/errors.js';
import { type EthtoolTransport, IoctlTransport } from './ioctl.js';
import { type EthtoolFailure, type EthtoolStringSet, stringSetReads, valuesReads } from './read.js';

const ETHTOOL_MIN_PERIOD_MS = 5000;

export interface EthtoolSourceOptions extends SysfsOptions {
  readonly minPeriodMs?: number;
  /** Monotonic milliseconds (tests). */
  readonly now?: () => number;
}

export class EthtoolCounterSource implements CounterSource {
  readonly kind = 'ethtool' as const;
  private readonly root: string;
  /** Why the last openReads() found nothing, per netdev (for `devices` and logs). */
  readonly lastOpen = new Map<string, { readonly reason: EthtoolFailure | 'no-known-stats'; readonly message: string }>();

  constructor(
    private readonly transport: EthtoolTransport,
    private readonly options: EthtoolSourceOptions = {},
  ) {
    this.root = resolveRoot(options);
  }

  static create(options: EthtoolSourceOptions = {}): { source: EthtoolCounterSource } | { error: string } {
    const opened = IoctlTransport.open();
    return opened.ok ? { source: new EthtoolCounterSource(opened.transport, options) } : { error: opened.error };
  }

  *openReads(attrs: PortAttributes): ReadProgram<PortCounterSet | undefined> {
    if (attrs.netdev === undefined) return undefined;
    const ifname = yield* physicalNetdevReads(this.root, attrs.netdev);
    const set = yield* stringSetReads(this.transport, ifname);
    if (!set.ok) {
      this.lastOpen.set(ifname, { reason: set.reason, message: set.message });
      return undefined;
    }
    const picked = set.value.names.flatMap((name, index) => (isKnownEthtoolStat(name) ? [{ name, index }] : []));
    if (picked.length === 0) {
      this.lastOpen.set(ifname, { reason: 'no-known-stats', message: `${ifname} (${set.value.driver || 'no driver name'}): none of its ${set.value.names.length} ethtool statistics is in the vocabulary` });
      return undefined;
    }
    this.lastOpen.delete(ifname);
    return new EthtoolCounterSet(this.transport, { device: attrs.device, port: attrs.port }, set.value, picked, this.options);
  }

  close(): void {
    this.transport.close();
  }
}

class EthtoolCounterSet implements PortCounterSet {
  readonly kind = 'ethtool' as const;
  readonly counters: readonly CounterSpec[];
  private last: { readonly at: number; readonly read: SetRead } | undefined;
  private closed = false;

  constructor(
    private readonly transport: EthtoolTransport,
    readonly port: PortRef,
    readonly strings: EthtoolStringSet,
    private readonly picked: readonly { readonly name: string; readonly index: number }[],
    private readonly options: EthtoolSourceOptions,
  ) {
    // ethtool carries u64; mlx5 PPCNT, bnxt_en and ice port counters are 64-bit.
    this.counters = picked.map(({ name }) => ({ name, bits: 64, overflow: 'wrap', meaning: undefined }));
  }

  *reads(): ReadProgram<SetRead> {
    if (this.closed) return this.failed('counter set is closed', 'CLOSED');
    const now = this.options.now ? this.options.now() : performance.now();
    if (this.last && now - this.last.at < (this.options.minPeriodMs ?? ETHTOOL_MIN_PERIOD_MS)) return this.last.read;
    const r = yield* valuesReads(this.transport, this.strings);
    // A changed set is read again from scratch: the sampler reopens the port's sets.
    if (!r.ok) {
      this.last = undefined;
      return r.reason === 'changed' ? { kind: 'gone', reason: 'changed', what: r.message } : this.failed(r.message);
    }
    const read: SetRead = { kind: 'values', counters: this.counters, values: this.picked.map(({ index }): CounterValue => ({ ok: true, value: r.value[index]! })) };
    this.last = { at: now, read };
    return read;
  }

  private failed(detail: string, code: 'SOURCE' | 'CLOSED' = 'SOURCE'): SetRead {
    const error: ReadError = { code, op: 'ioctl', detail };
    return { kind: 'values', counters: this.counters, values: this.counters.map(() => ({ ok: false, error })) };
  }

  close(): void {
    this.closed = true;
  }
}
