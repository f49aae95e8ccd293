/** `devices`: the RDMA ports this host has, their attributes and counter sources. */
import { DEFAULT_SYSFS_ROOT } from '../sources/sysfs/index.js';
import { formatDataRate } from '../input/units.js';
import { type FlagSpec, commandFlags, str } from './args.js';
import type { Io } from './io.js';
import { quantitySources, samplePortsOnce } from './ports.js';

const FLAGS: FlagSpec = {
  'path.sysfs': { type: 'string', default: DEFAULT_SYSFS_ROOT, help: 'sysfs mountpoint' },
  output: { type: 'string', default: 'text', help: 'output format', choices: ['text', 'json'] },
  help: { type: 'boolean', help: 'show this help' },
};

export function runDevices(argv: string[], io: Io): number {
  const flags = commandFlags(argv, io, {
    usage: 'devices [flags]',
    summary: 'Lists RDMA ports, their attributes and which counter source each quantity comes from.\nExit status: 0 ports found, 1 no RDMA port found, 2 invalid flags.',
    flags: FLAGS,
  });
  if (typeof flags === 'number') return flags;
  const sampled = samplePortsOnce(str(flags, 'path.sysfs')!);
  const ports = sampled.ports.map((p) => ({
    ...p.attrs,
    counterSources: [...new Set(p.sets.map((s) => s.kind))],
    counters: p.counters.length,
    quantities: quantitySources(p),
  }));
  if (str(flags, 'output') === 'json') {
    io.stdout(`${JSON.stringify({ notes: sampled.notes, ports }, null, 2)}\n`);
    return ports.length ? 0 : 1;
  }
  for (const note of sampled.notes) io.stdout(`note: ${note}\n`);
  if (ports.length === 0) {
    io.stderr(`devices: no RDMA port found under ${str(flags, 'path.sysfs')}/class/infiniband (no RDMA driver loaded, or for soft-RoCE: rdma link add rxe0 type rxe netdev IFACE)\n`);
    return 1;
  }
  for (const p of ports) {
    io.stdout(`${p.device}/${p.port}  state ${p.state}${p.physState ? ` (${p.physState})` : ''}  link ${p.linkLayer}` +
      `  netdev ${p.netdev ?? '-'}  active MTU ${p.activeIbMtu ?? '?'}  rate ${p.rateBitsPerSecond !== undefined ? `${p.rateBitsPerSecond / 1e9} Gb/s (${formatDataRate(p.rateBitsPerSecond / 8, 'bytes')})` : '?'}` +
      `  GID types ${p.gidTypes.join(', ') || '-'}  attributes from ${p.attributeSource}\n`);
    io.stdout(`  counter sources: ${p.counterSources.join(', ') || 'none'} (${p.counters} counters)\n`);
    for (const q of p.quantities) {
      const [first, ...rest] = q.sources;
      const used = first ? `${first.kind}:${first.counter}${first.layer ? ` (${first.layer})` : ''}${first.readable ? '' : ' UNREADABLE'}` : 'none';
      const also = rest.length ? `; also ${rest.map((s) => `${s.kind}:${s.counter}`).join(', ')}` : '';
      io.stdout(`  ${q.direction} ${q.quantity.padEnd(7)} <- ${used}${also}\n`);
    }
  }
  return 0;
}
