/**
 * Which kernel driver owns an RDMA device, as far as sysfs can tell. The answer picks
 * counter widths and meanings (counters.ts) and the RoCE MTU rule (parse.ts).
 */
import * as path from 'node:path';
import { ibDeviceDir } from './paths.js';
import { type ReadProgram, withoutReads, read } from '../../reads/program.js';

export type RdmaDriver = 'mlx5' | 'mlx4' | 'bnxt_re' | 'rxe' | 'unknown';

/** Basename of the PCI driver link (`device/driver`) -> RDMA driver. */
const PCI_DRIVERS: Readonly<Record<string, RdmaDriver>> = {
  mlx5_core: 'mlx5',
  mlx4_core: 'mlx4',
  bnxt_en: 'bnxt_re',
};

/** Default names the drivers register (mlx5_%d, mlx4_%d, bnxt_re%d, rxe%d by convention). */
const NAME_PREFIXES: ReadonlyArray<readonly [RegExp, RdmaDriver]> = [
  [/^mlx5_/, 'mlx5'],
  [/^mlx4_/, 'mlx4'],
  [/^bnxt_re/, 'bnxt_re'],
  [/^rxe/, 'rxe'],
];

export function driverReads(root: string, device: string, hwCounterNames: readonly string[] = []): ReadProgram<RdmaDriver> {
  let dir: string;
  try {
    dir = ibDeviceDir(root, device);
  } catch {
    return withoutReads('unknown');
  }
  return fromDevice(dir, device, hwCounterNames);
}

function* fromDevice(dir: string, device: string, hwCounterNames: readonly string[]): ReadProgram<RdmaDriver> {
  const r = yield* read([
    { kind: 'stat', path: path.join(dir, 'parent') },
    { kind: 'readLink', path: path.join(dir, 'device', 'driver') },
  ]);
  // Only rxe registers a device-level `parent` attribute (parent_show/DEVICE_ATTR_RO(parent) in
  // drivers/infiniband/sw/rxe/rxe_verbs.c). Check it first: rxe's `device` link points at the
  // netdev's parent, so an rxe on a ConnectX netdev would otherwise look like mlx5.
  return driverFrom(r.ok(0), r.text(1), device, hwCounterNames);
}

/** The decision, from whether `parent` exists and where `device/driver` points. */
export function driverFrom(hasParent: boolean, driverLink: string | undefined, device: string, hwCounterNames: readonly string[]): RdmaDriver {
  if (hasParent) return 'rxe';
  const fromLink = driverLink === undefined ? undefined : PCI_DRIVERS[path.basename(driverLink)];
  return fromLink ?? fromName(device) ?? fromCounters(hwCounterNames);
}

function fromName(device: string): RdmaDriver | undefined {
  return NAME_PREFIXES.find(([re]) => re.test(device))?.[1];
}

/** rxe's counter set (rxe_hw_counters.c) for renamed devices on kernels without `parent`. */
function fromCounters(names: readonly string[]): RdmaDriver {
  return names.includes('sent_pkts') && names.includes('rcvd_pkts') ? 'rxe' : 'unknown';
}
