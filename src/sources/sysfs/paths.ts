/**
 * Path building and small helpers for the sysfs sources.
 *
 * Every path is built under one root (node_exporter's `--path.sysfs` habit) from
 * names that were validated first, so a hostile or broken device/netdev name can
 * never make the exporter read outside that root.
 */
import * as path from 'node:path';

export const DEFAULT_SYSFS_ROOT = '/sys';

export interface SysfsOptions {
  /** Where sysfs is mounted; defaults to /sys. */
  readonly sysfsRoot?: string;
}

/** A device, port or netdev name that would leave the sysfs root (or is not a name at all). */
class SysfsNameError extends Error {
  override readonly name = 'SysfsNameError';
  constructor(readonly what: string, readonly value: unknown) {
    super(`invalid ${what} name: ${JSON.stringify(String(value)).slice(0, 80)}`);
  }
}

/** IB_DEVICE_NAME_MAX is 64 (include/rdma/ib_verbs.h); IFNAMSIZ is 16. One bound covers both. */
const MAX_NAME_LENGTH = 64;
// eslint-disable-next-line no-control-regex -- control characters are what this rejects
const FORBIDDEN = /[/\\\u0000-\u001f\u007f\s]/;

/** A single path component that names a device or netdev: no separators, no dot-dirs, no NUL. */
export function isSafeName(name: unknown): name is string {
  return (
    typeof name === 'string' &&
    name.length > 0 &&
    name.length <= MAX_NAME_LENGTH &&
    name !== '.' &&
    name !== '..' &&
    !FORBIDDEN.test(name)
  );
}

/** Port directories are decimal numbers: 1..N for HCAs, 0 for a switch's management port. */
export function isSafePortName(name: unknown): name is string {
  return typeof name === 'string' && /^(0|[1-9]\d{0,2})$/.test(name);
}

export function isSafePortNumber(port: unknown): port is number {
  return typeof port === 'number' && Number.isInteger(port) && port >= 0 && port <= 999;
}

export function resolveRoot(options: SysfsOptions | undefined): string {
  return path.resolve(options?.sysfsRoot ?? DEFAULT_SYSFS_ROOT);
}

export function ibDeviceDir(root: string, device: string): string {
  if (!isSafeName(device)) throw new SysfsNameError('device', device);
  return path.join(root, 'class', 'infiniband', device);
}

export function ibPortDir(root: string, device: string, port: number): string {
  if (!isSafePortNumber(port)) throw new SysfsNameError('port', port);
  return path.join(ibDeviceDir(root, device), 'ports', String(port));
}

export function netdevDir(root: string, netdev: string): string {
  if (!isSafeName(netdev)) throw new SysfsNameError('netdev', netdev);
  return path.join(root, 'class', 'net', netdev);
}

/**
 * Output room for one directory listing: a 1024-entry rxe GID table needs ~5 KB, hw_counters/ ~2
 * KB. A listing that does not fit is read again alone with room for any directory (namesOf()).
 */
export const DIR_READ_BYTES = 8 * 1024;

/** Sort helper for numeric directory entries (GID indices, port numbers). */
export function byNumber(a: string, b: string): number {
  return Number(a) - Number(b);
}
