/**
 * The libibverbs calls the inventory makes, behind an interface so tests can replay captured
 * struct bytes. The koffi binding loads `libibverbs.so.1` on first use.
 *
 * Symbols (rdma-core libibverbs/libibverbs.map.in; dlsym picks the default @@ version):
 * ibv_get_device_list, ibv_free_device_list, ibv_get_device_name, ibv_open_device,
 * ibv_close_device, ibv_query_device, ibv_query_port (IBVERBS_1.0/1.1), _ibv_query_gid_ex and
 * _ibv_query_gid_table (IBVERBS_1.11, rdma-core 32+), ibv_query_port_speed (IBVERBS_1.16,
 * optional: absent from Debian bookworm's rdma-core 44).
 */
import {
  type Koffi,
  type KoffiLibrary,
  NativeLoadError,
  asInt,
  asPointer,
  errorText,
  loadKoffi,
  loadLibc,
} from '../../ffi/libc.js';
import { GID_ENTRY_SIZE } from './layout.js';

export interface DeviceList {
  /** The array ibv_get_device_list() returned; null when it failed. */
  readonly list: bigint | null;
  readonly devices: readonly bigint[];
  /** errno when list is null. */
  readonly errno: number;
}

export interface VerbsNative {
  getDeviceList(): DeviceList;
  freeDeviceList(list: bigint): void;
  deviceName(device: bigint): string | undefined;
  /** Context pointer, or an errno. */
  openDevice(device: bigint): { readonly ctx: bigint | null; readonly errno: number };
  closeDevice(ctx: bigint): number;
  /** 0 or an errno; fills a 232-byte struct ibv_device_attr. */
  queryDevice(ctx: bigint, out: Uint8Array): number;
  /** 0 or an errno; fills the 48-byte compat struct ibv_port_attr. */
  queryPort(ctx: bigint, port: number, out: Uint8Array): number;
  /** 0 or an errno (ENODATA for an empty slot); fills one 32-byte ibv_gid_entry. */
  queryGidEx(ctx: bigint, port: number, index: number, out: Uint8Array): number;
  /** Valid entries written, or -errno; undefined when the library lacks the symbol. */
  queryGidTable(ctx: bigint, out: Uint8Array, maxEntries: number): number | undefined;
  /** Effective speed in 100 Mb/s units; undefined when unsupported or failing. */
  queryPortSpeed(ctx: bigint, port: number): bigint | undefined;
  ifIndexToName(ifindex: number): string | undefined;
}

export const LIBIBVERBS = 'libibverbs.so.1';

export class VerbsSymbolError extends Error {
  override readonly name = 'VerbsSymbolError';
}

type Fn = (...args: unknown[]) => unknown;

function required(lib: KoffiLibrary, proto: string): Fn {
  try {
    return lib.func(proto);
  } catch (e) {
    throw new VerbsSymbolError(`${LIBIBVERBS} lacks ${proto}: ${errorText(e)}`);
  }
}

function optional(lib: KoffiLibrary, proto: string): Fn | undefined {
  try {
    return lib.func(proto);
  } catch {
    return undefined;
  }
}

/** Returns an errno-style code: the function's non-zero result, or errno if it said -1. */
function rc(koffi: Koffi, v: unknown, what: string): number {
  const n = asInt(v, what);
  if (n === 0) return 0;
  return n > 0 ? n : koffi.errno() || -n;
}

/** Loads libibverbs.so.1 through koffi; throws NativeLoadError or VerbsSymbolError. */
export function loadVerbsNative(): VerbsNative {
  const koffi = loadKoffi();
  let lib: KoffiLibrary;
  try {
    lib = koffi.load(LIBIBVERBS);
  } catch (e) {
    throw new NativeLoadError(LIBIBVERBS, errorText(e));
  }
  return bindVerbs(koffi, lib);
}

function bindVerbs(koffi: Koffi, lib: KoffiLibrary): VerbsNative {
  const getList = required(lib, 'void *ibv_get_device_list(_Out_ int *num)');
  const freeList = required(lib, 'void ibv_free_device_list(void *list)');
  const getName = required(lib, 'const char *ibv_get_device_name(void *device)');
  const open = required(lib, 'void *ibv_open_device(void *device)');
  const close = required(lib, 'int ibv_close_device(void *ctx)');
  const queryDevice = required(lib, 'int ibv_query_device(void *ctx, void *attr)');
  const queryPort = required(lib, 'int ibv_query_port(void *ctx, uint8_t port, void *attr)');
  const queryGidEx = required(
    lib,
    'int _ibv_query_gid_ex(void *ctx, uint32_t port, uint32_t index, void *entry, uint32_t flags, size_t size)',
  );
  const queryGidTable = optional(
    lib,
    'intptr_t _ibv_query_gid_table(void *ctx, void *entries, size_t max, uint32_t flags, size_t size)',
  );
  const queryPortSpeed = optional(lib, 'int ibv_query_port_speed(void *ctx, uint32_t port, void *speed)');
  const libc = loadLibc();

  return {
    getDeviceList: () => {
      const num = [0];
      const list = asPointer(getList(num), 'ibv_get_device_list');
      if (list === null) return { list, devices: [], errno: koffi.errno() };
      const count = asInt(num[0], 'ibv_get_device_list count');
      const raw: unknown = count > 0 ? koffi.decode(list, 'void *', count) : [];
      const devices = (Array.isArray(raw) ? raw : []).map((p: unknown) => asPointer(p, 'device pointer'));
      return { list, devices: devices.filter((d): d is bigint => d !== null), errno: 0 };
    },
    freeDeviceList: (list) => void freeList(list),
    deviceName: (device) => {
      const name: unknown = getName(device);
      return typeof name === 'string' ? name : undefined;
    },
    openDevice: (device) => {
      const ctx = asPointer(open(device), 'ibv_open_device');
      return { ctx, errno: ctx === null ? koffi.errno() : 0 };
    },
    closeDevice: (ctx) => rc(koffi, close(ctx), 'ibv_close_device'),
    queryDevice: (ctx, out) => rc(koffi, queryDevice(ctx, out), 'ibv_query_device'),
    queryPort: (ctx, port, out) => rc(koffi, queryPort(ctx, port, out), 'ibv_query_port'),
    queryGidEx: (ctx, port, index, out) =>
      rc(koffi, queryGidEx(ctx, port, index, out, 0, GID_ENTRY_SIZE), '_ibv_query_gid_ex'),
    queryGidTable: (ctx, out, max) =>
      queryGidTable === undefined ? undefined : asInt(queryGidTable(ctx, out, max, 0, GID_ENTRY_SIZE), '_ibv_query_gid_table'),
    queryPortSpeed: (ctx, port) => {
      if (queryPortSpeed === undefined) return undefined;
      const speed = new BigUint64Array(1);
      return asInt(queryPortSpeed(ctx, port, speed), 'ibv_query_port_speed') === 0 ? speed[0] : undefined;
    },
    ifIndexToName: (ifindex) => libc.ifIndexToName(ifindex),
  };
}
