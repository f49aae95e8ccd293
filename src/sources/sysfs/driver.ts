/**
 * Which kernel driver owns an RDMA device, as far as sysfs can tell. The answer picks
 * counter widths and meanings (counters.ts) and the RoCE MTU rule (parse.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ibDeviceDir } from './paths.js';

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

export function detectDriver(root: string, device: string, hwCounterNames: readonly string[] = []): RdmaDriver {
  let dir: string;
  try {
    dir = ibDeviceDir(root, device);
  } catch {
    return 'unknown';
  }
  // Only rxe registers a device-level `parent` attribute (parent_show/DEVICE_ATTR_RO(parent) in
  // drivers/infiniband/sw/rxe/rxe_verbs.c). Check it first: rxe's `device` link points at the
  // netdev's parent, so an rxe on a ConnectX netdev would otherwise look like mlx5.
  if (fs.existsSync(path.join(dir, 'parent'))) return 'rxe';
  return fromDriverLink(dir) ?? fromName(device) ?? fromCounters(hwCounterNames);
}

function fromDriverLink(dir: string): RdmaDriver | undefined {
  try {
    return PCI_DRIVERS[path.basename(fs.readlinkSync(path.join(dir, 'device', 'driver')))];
  } catch {
    return undefined;
  }
}

function fromName(device: string): RdmaDriver | undefined {
  return NAME_PREFIXES.find(([re]) => re.test(device))?.[1];
}

/** rxe's counter set (rxe_hw_counters.c) for renamed devices on kernels without `parent`. */
function fromCounters(names: readonly string[]): RdmaDriver {
  return names.includes('sent_pkts') && names.includes('rcvd_pkts') ? 'rxe' : 'unknown';
}
