/**
 * PortInventory over /sys/class/infiniband. Nothing here throws: a file that is missing or
 * fails to read (EINVAL for an empty GID entry is normal) leaves that attribute undefined.
 */
import * as path from 'node:path';
import type { PortAttributes, PortInventory, PortRef } from '../types.js';
import { detectDriver } from './driver.js';
import { parseLinkLayer, parseNumberedName, parseRate, roceActiveMtu } from './parse.js';
import {
  byNumber,
  ibPortDir,
  isDirectory,
  isSafeName,
  isSafePortName,
  listDir,
  netdevDir,
  readText,
  resolveRoot,
  type SysfsOptions,
} from './paths.js';

/**
 * The GID cache fills the lowest free index first (add_modify_gid() via find_gid() in
 * drivers/infiniband/core/cache.c), so used entries sit at the start of the table and holes
 * only come from deletions. Stop scanning after this many unusable entries in a row instead of
 * opening all 1024 (rxe) or 255 (mlx5) files every tick.
 */
const GID_SCAN_GIVE_UP = 32;

export class SysfsInventory implements PortInventory {
  readonly kind = 'sysfs' as const;
  readonly root: string;

  constructor(options?: SysfsOptions) {
    this.root = resolveRoot(options);
  }

  listPorts(): PortRef[] {
    const ibRoot = path.join(this.root, 'class', 'infiniband');
    return listDir(ibRoot)
      .filter(isSafeName)
      .flatMap((device) =>
        listDir(path.join(ibRoot, device, 'ports'))
          .filter(isSafePortName)
          .sort(byNumber)
          .map((p) => ({ device, port: Number(p) })),
      );
  }

  readAttributes(ref: PortRef): PortAttributes | undefined {
    const dir = this.portDir(ref);
    if (dir === undefined || !isDirectory(dir)) return undefined;
    const linkLayer = parseLinkLayer(readText(path.join(dir, 'link_layer')));
    const { netdev, gidTypes } = scanGids(path.join(dir, 'gid_attrs'));
    return {
      device: ref.device,
      port: ref.port,
      state: parseNumberedName(readText(path.join(dir, 'state'))) ?? 'unknown',
      physState: parseNumberedName(readText(path.join(dir, 'phys_state'))),
      linkLayer,
      activeIbMtu: linkLayer === 'Ethernet' ? this.roceMtu(ref.device, netdev) : undefined,
      rateBitsPerSecond: parseRate(readText(path.join(dir, 'rate'))),
      netdev,
      gidTypes,
      attributeSource: 'sysfs',
    };
  }

  readState(ref: PortRef): Pick<PortAttributes, 'state' | 'physState'> | undefined {
    const dir = this.portDir(ref);
    const state = dir === undefined ? undefined : readText(path.join(dir, 'state'));
    if (dir === undefined || (state === undefined && !isDirectory(dir))) return undefined;
    return { state: parseNumberedName(state) ?? 'unknown', physState: parseNumberedName(readText(path.join(dir, 'phys_state'))) };
  }

  close(): void {
    // Attributes are read fresh each call; no descriptors are held.
  }

  private portDir(ref: PortRef): string | undefined {
    try {
      return ibPortDir(this.root, ref.device, ref.port);
    } catch {
      return undefined;
    }
  }

  /** sysfs has no active_mtu file; derive it from the netdev MTU as the driver does. */
  private roceMtu(device: string, netdev: string | undefined): number | undefined {
    if (netdev === undefined) return undefined;
    const mtu = Number(readText(path.join(netdevDir(this.root, netdev), 'mtu')));
    if (!Number.isInteger(mtu)) return undefined;
    return roceActiveMtu(mtu, detectDriver(this.root, device) === 'rxe' ? 'rxe' : 'iboe');
  }
}

interface GidScan {
  readonly netdev: string | undefined;
  readonly gidTypes: readonly string[];
}

/** First named netdev in gid_attrs/ndevs/<i> and the distinct gid_attrs/types/<i>. */
function scanGids(gidAttrs: string): GidScan {
  const ndevDir = path.join(gidAttrs, 'ndevs');
  const typeDir = path.join(gidAttrs, 'types');
  const indices = [...new Set([...listDir(ndevDir), ...listDir(typeDir)])]
    .filter((i) => /^\d+$/.test(i))
    .sort(byNumber);
  let netdev: string | undefined;
  const types = new Set<string>();
  let misses = 0;
  for (const i of indices) {
    if (misses >= GID_SCAN_GIVE_UP) break;
    const type = readText(path.join(typeDir, i));
    const ndev = netdev === undefined ? readText(path.join(ndevDir, i)) : undefined;
    if (ndev && isSafeName(ndev)) netdev = ndev;
    if (type) types.add(type);
    misses = type ? 0 : misses + 1;
  }
  return { netdev, gidTypes: [...types] };
}
