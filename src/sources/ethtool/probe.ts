/**
 * `node dist/sources/ethtool/probe.js IFNAME [--raw]`: the ethtool reader's view of a netdev as
 * JSON (driver, names, values), to compare with `ethtool -S IFNAME` (test/rxe/ethtool-guest.sh)
 * and, with --raw, the kernel's answers in hex to capture test fixtures.
 */
import { runsAsScript } from '../script.js';
import { hex } from '../netlink/codec.js';
import { type EthtoolReply, type EthtoolTransport, IoctlTransport } from './ioctl.js';
import { ethtoolStatsReads, valuesReads } from './read.js';
import { type ReadProgram, runSync } from '../../reads/program.js';

export interface CapturedReply {
  readonly command: string;
  readonly errno: number;
  readonly hex?: string;
}

/** Wraps a transport and records every command and answer. */
export class RecordingTransport implements EthtoolTransport {
  readonly replies: CapturedReply[] = [];
  constructor(private readonly inner: EthtoolTransport) {}
  *requestReads(ifname: string, command: Uint8Array): ReadProgram<EthtoolReply> {
    const r = yield* this.inner.requestReads(ifname, command);
    this.replies.push({ command: hex(command), errno: r.errno, ...('data' in r ? { hex: hex(r.data) } : {}) });
    return r;
  }
  close(): void {
    this.inner.close();
  }
}

function main(argv: readonly string[]): number {
  const ifname = argv.find((a) => !a.startsWith('--'));
  if (ifname === undefined) {
    process.stderr.write('usage: probe.js IFNAME [--raw] [--repeat N]\n');
    return 2;
  }
  const opened = IoctlTransport.open();
  if (!opened.ok) {
    process.stderr.write(`${opened.error}\n`);
    return 1;
  }
  const t = new RecordingTransport(opened.transport);
  const repeat = Number(argv[argv.indexOf('--repeat') + 1] ?? 0) || 0;
  try {
    const r = runSync(ethtoolStatsReads(t, ifname));
    if (!r.ok) {
      process.stdout.write(`${JSON.stringify({ ifname, ok: false, reason: r.reason, message: r.message })}\n`);
      return 1;
    }
    const out: Record<string, unknown> = {
      ifname, ok: true, driver: r.value.driver,
      stats: Object.fromEntries(r.value.names.map((n, i) => [n, r.value.values[i]!.toString()])),
    };
    if (repeat > 0) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < repeat; i++) runSync(valuesReads(opened.transport, r.value));
      // What a sampling tick costs: ETHTOOL_GSTATS only (the names are read once, at open).
      out.microsecondsPerValuesRead = Number(process.hrtime.bigint() - started) / 1000 / repeat;
    }
    if (argv.includes('--raw')) out.replies = t.replies;
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  } finally {
    t.close();
  }
}

if (runsAsScript(import.meta.url)) process.exitCode = main(process.argv.slice(2));
