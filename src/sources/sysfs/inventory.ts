/**
 * PortInventory over /sys/class/infiniband. Nothing here throws: a file that is missing or
 * fails to read (EINVAL for an empty GID entry is normal) leaves that attribute undefined.
 * Every read is a read program (the sampler runs them bounded); the state of a known port is
 * re-read every tick through descriptors kept open, like counters.
 */
import { closeSync, constants as fsConstants } from 'node:fs';
import * as path from 'node:path';
import type { PortAttributes, PortInventory, PortRef, PortState } from '../types.js';
import { portKey } from '../types.js';
import { driverFrom } from './driver.js';
import { parseLinkLayer, parseNumberedName, parseRate, roceActiveMtu } from './parse.js';
import { DIR_READ_BYTES, byNumber, ibDeviceDir, ibPortDir, isSafeName, isSafePortName, netdevDir, resolveRoot, type SysfsOptions } from './paths.js';
import { type Op, OpBatch, type Results, isDirectoryMode } from '../../reads/ops.js';
import { type ReadProgram, withoutReads, namesOf, read } from '../../reads/program.js';
import { ERRNO } from '../../ffi/errno.js';

/**
 * The GID cache fills the lowest free index first (add_modify_gid() via find_gid() in
 * drivers/infiniband/core/cache.c), so used entries sit at the start of the table and holes
 * only come from deletions. Stop scanning after this many unusable entries in a row instead of
 * opening all 1024 (rxe) or 255 (mlx5) files every tick.
 */
const GID_SCAN_GIVE_UP = 32;
/** GID entries read per round: the used ones of a typical table and the misses that end it. */
const GID_CHUNK = 40;
const ENOBUFS = -ERRNO.ENOBUFS;
/** Room for any directory, for a listing that did not fit in DIR_READ_BYTES. */
const LARGE_DIR_BYTES = 4 * 1024 * 1024;
/** ndevs/ entries read per round while no netdev was found (index 0 names it on every driver seen). */
const NDEV_CHUNK = 4;
/** Port attribute files are one short line (rate_show(), gid_attr_type's "RoCE v2"...). */
const ATTR_BYTES = 256;
/** A read of one attribute file, whole. */
const attributeRead = (file: string): Op => ({ kind: 'readFile', path: file, max: ATTR_BYTES });
/** The first attribute round's own reads (stat, four files, driver); what else it reads comes after. */
const ATTRIBUTE_OPS = 7;
/** Scan batches a plan keeps: a table's type chunks and the ndevs/ chunks its used entries made. */
const MAX_PLANNED_BATCHES = 32;

/**
 * What a port's attribute read keeps from one refresh to the next (each port is refreshed every
 * minute): its batches, built once, and its GID table's indices while the port directory is the
 * same one. sysfs makes gid_attrs/types/<i> for every table entry when the port registers
 * (setup_gid_attrs() from ib_setup_port_attrs(), drivers/infiniband/core/sysfs.c) and removes
 * them with the port, so the table is listed again only for a new directory.
 */
interface AttributePlan {
  /** The attribute files' reads (ATTRIBUTE_OPS of them). */
  readonly ops: readonly Op[];
  /** The first round with the types/ listing after the attribute files. */
  readonly listed: OpBatch;
  readonly typeDir: string;
  readonly ndevDir: string;
  table: GidTable | undefined;
  /** Which ndevs/ entry named the netdev at the last refresh, and the netdev. */
  found: { readonly ndevIndex: string | undefined; readonly netdev: string | undefined } | undefined;
  guess: Guess | undefined;
  readonly batches: Map<string, OpBatch>;
}

interface GidTable {
  readonly ino: number;
  readonly indices: readonly string[];
}

/**
 * A refresh in one round once the table is known: the attribute files, the table's first chunk
 * of types (where the used entries are), and the ndevs/ entry and the netdev MTU that the last
 * refresh found. What the guesses miss is read in further rounds, as without them.
 */
interface Guess {
  readonly batch: OpBatch;
  readonly table: GidTable;
  readonly key: string;
  readonly chunk: readonly string[];
  readonly ndevIndex: string | undefined;
  readonly netdev: string | undefined;
}

/** The state files of a known port (and its netdev's mtu), kept open and re-read with pread. */
interface HeldState {
  readonly dir: string;
  readonly batch: OpBatch;
  readonly fds: readonly number[];
  /** Where state, phys_state and the mtu are in the batch (-1: not there). */
  readonly index: readonly number[];
  readonly ino: number;
  /** The netdev MTU text the last attribute read derived activeIbMtu from, when there is one. */
  readonly mtu: string | undefined;
  /** The files' bytes at the last read and what they said: unchanged bytes are not decoded again. */
  last?: { readonly bytes: readonly Uint8Array[]; readonly state: PortState };
}

export class SysfsInventory implements PortInventory {
  readonly kind = 'sysfs' as const;
  readonly root: string;
  private readonly held = new Map<string, HeldState>();
  private listing: OpBatch | undefined;
  private readonly plans = new Map<string, AttributePlan>();
  /** Per port, the netdev and its MTU text as the last attribute read saw them. */
  private readonly netdevMtu = new Map<string, { readonly netdev: string; readonly mtu: string | undefined }>();

  constructor(options?: SysfsOptions) {
    this.root = resolveRoot(options);
  }

  *listReads(): ReadProgram<PortRef[]> {
    const ibRoot = path.join(this.root, 'class', 'infiniband');
    const root = yield* read([{ kind: 'readDir', path: ibRoot, max: DIR_READ_BYTES }]);
    const devices = ((yield* namesOf(root, 0, ibRoot)) ?? []).filter(isSafeName).sort();
    if (devices.length === 0) return [];
    const dirs = devices.map((d) => path.join(ibRoot, d, 'ports'));
    const r = yield* read(dirs.map((dir): Op => ({ kind: 'readDir', path: dir, max: DIR_READ_BYTES })));
    const listed = devices.map((_, i) => (r.status(i) === ENOBUFS ? undefined : (r.names(i) ?? [])));
    const long = dirs.filter((_, i) => listed[i] === undefined);
    if (long.length > 0) {
      // Listings that did not fit, again with room for any directory.
      const again = yield* read(long.map((dir): Op => ({ kind: 'readDir', path: dir, max: LARGE_DIR_BYTES })));
      let k = 0;
      for (let i = 0; i < listed.length; i++) if (listed[i] === undefined) listed[i] = again.names(k++) ?? [];
    }
    const refs: PortRef[] = [];
    devices.forEach((device, i) => {
      for (const p of listed[i]!.filter(isSafePortName).sort(byNumber)) refs.push({ device, port: Number(p) });
    });
    return refs;
  }

  /** One listing of class/infiniband: a device that appeared or vanished changes the ports. */
  *listChangedReads(known: readonly PortRef[]): ReadProgram<boolean> {
    this.listing ??= new OpBatch([{ kind: 'readDir', path: path.join(this.root, 'class', 'infiniband'), max: DIR_READ_BYTES }]);
    const devices = ((yield* namesOf(yield this.listing, 0, path.join(this.root, 'class', 'infiniband'))) ?? []).filter(isSafeName);
    const now = new Set(devices);
    const before = new Set(known.map((p) => p.device));
    return now.size !== before.size || devices.some((d) => !before.has(d));
  }

  attributeReads(ref: PortRef): ReadProgram<PortAttributes | undefined> {
    const dir = this.portDir(ref);
    return dir === undefined ? withoutReads(undefined) : this.attributesOf(ref, dir);
  }

  stateReads(ref: PortRef): ReadProgram<PortState | undefined> {
    const h = this.held.get(portKey(ref));
    if (h) return this.heldStateOf(ref, h);
    const dir = this.portDir(ref);
    return dir === undefined ? withoutReads(undefined) : this.stateOf(ref, dir);
  }


  forget(ref: PortRef): void {
    this.release(portKey(ref));
    this.netdevMtu.delete(portKey(ref));
    this.plans.delete(portKey(ref));
  }

  private release(key: string): void {
    const h = this.held.get(key);
    this.held.delete(key);
    if (h) closeAll(h.fds);
  }

  close(): void {
    for (const h of this.held.values()) closeAll(h.fds);
    this.held.clear();
    this.plans.clear();
  }

  private portDir(ref: PortRef): string | undefined {
    try {
      return ibPortDir(this.root, ref.device, ref.port);
    } catch {
      return undefined;
    }
  }

  private *attributesOf(ref: PortRef, dir: string): ReadProgram<PortAttributes | undefined> {
    const key = portKey(ref);
    const plan = this.plans.get(key) ?? this.planFor(key, ref, dir);
    const table = plan.table;
    const guess = table ? this.guessOf(plan, table) : undefined;
    const r = yield guess?.batch ?? plan.listed;
    const st = r.stat(0);
    if (st === undefined || !isDirectoryMode(st.mode)) return undefined;
    // Everything from this round is decoded before the next one (Results do not outlive a yield).
    const text = (i: number): string | undefined => r.text(i)?.trim();
    const linkLayer = parseLinkLayer(text(1));
    const state = parseNumberedName(text(2)) ?? 'unknown';
    const physState = parseNumberedName(text(3));
    const rateBitsPerSecond = parseRate(text(4));
    const driver = driverFrom(r.ok(5), r.text(6), ref.device, []);
    let indices: readonly string[];
    let guessed: GuessedReads | undefined;
    if (guess !== undefined && guess.table.ino === st.ino) {
      indices = guess.table.indices;
      let at = ATTRIBUTE_OPS;
      const types = guess.chunk.map(() => text(at++));
      const ndev = guess.ndevIndex === undefined ? undefined : { index: guess.ndevIndex, text: text(at++) };
      guessed = { types, ndev, mtu: guess.netdev === undefined ? undefined : { netdev: guess.netdev, text: text(at) } };
    } else {
      // The listing of this round, or (a new directory, or one too long for the first listing) another.
      const listed = guess === undefined && r.status(ATTRIBUTE_OPS) !== ENOBUFS ? { ok: r.ok(ATTRIBUTE_OPS), names: r.names(ATTRIBUTE_OPS) } : undefined;
      const again = listed ?? (yield* this.listGids(plan.typeDir));
      indices = (again.names ?? []).filter((i) => /^\d+$/.test(i)).sort(byNumber);
      plan.table = again.ok ? { ino: st.ino, indices } : undefined;
    }
    const { netdev, ndevIndex, gidTypes } = yield* scanGids(plan, indices, guessed);
    plan.found = { ndevIndex, netdev };
    const mtu = linkLayer === 'Ethernet' && netdev !== undefined
      ? (guessed?.mtu?.netdev === netdev && guessed.mtu.text !== undefined ? guessed.mtu.text : yield* this.netdevMtuText(netdev))
      : undefined;
    this.remember(ref, netdev, mtu);
    return {
      device: ref.device,
      port: ref.port,
      state,
      physState,
      linkLayer,
      activeIbMtu: linkLayer === 'Ethernet' ? roceMtu(mtu, driver === 'rxe') : undefined,
      rateBitsPerSecond,
      netdev,
      gidTypes,
      attributeSource: 'sysfs',
    };
  }

  /** The port's attribute batches, built once. */
  private planFor(key: string, ref: PortRef, dir: string): AttributePlan {
    const gid = path.join(dir, 'gid_attrs');
    const device = ibDeviceDir(this.root, ref.device);
    const ops: Op[] = [
      { kind: 'stat', path: dir },
      ...['link_layer', 'state', 'phys_state', 'rate'].map((f) => attributeRead(path.join(dir, f))),
      // What roceMtu() needs to know the driver (driver.ts).
      { kind: 'stat', path: path.join(device, 'parent') },
      { kind: 'readLink', path: path.join(device, 'device', 'driver') },
    ];
    const typeDir = path.join(gid, 'types');
    // ndevs/ and types/ list the same indices (one per table entry, ib_setup_port_attrs()).
    const plan: AttributePlan = {
      ops,
      listed: new OpBatch([...ops, { kind: 'readDir', path: typeDir, max: DIR_READ_BYTES }]),
      typeDir,
      ndevDir: path.join(gid, 'ndevs'),
      table: undefined,
      found: undefined,
      guess: undefined,
      batches: new Map(),
    };
    this.plans.set(key, plan);
    return plan;
  }

  /** The one-round read for the table and what the last refresh found (kept while they stay). */
  private guessOf(plan: AttributePlan, table: GidTable): Guess {
    const ndevIndex = plan.found?.ndevIndex;
    const netdev = plan.found?.netdev;
    const key = `${ndevIndex ?? ''}\0${netdev ?? ''}`;
    if (plan.guess?.table === table && plan.guess.key === key) return plan.guess;
    const chunk = table.indices.slice(0, GID_CHUNK);
    const batch = new OpBatch([
      ...plan.ops,
      ...chunk.map((i) => attributeRead(path.join(plan.typeDir, i))),
      ...(ndevIndex === undefined ? [] : [attributeRead(path.join(plan.ndevDir, ndevIndex))]),
      ...(netdev === undefined ? [] : [attributeRead(this.mtuFile(netdev))]),
    ]);
    plan.guess = { batch, table, key, chunk, ndevIndex, netdev };
    return plan.guess;
  }

  private *listGids(typeDir: string): ReadProgram<{ readonly ok: boolean; readonly names: string[] | undefined }> {
    const r = yield* read([{ kind: 'readDir', path: typeDir, max: DIR_READ_BYTES }]);
    const names = yield* namesOf(r, 0, typeDir);
    return { ok: names !== undefined, names };
  }

  /** The netdev's MTU file: what the active MTU of a RoCE port is derived from. */
  private mtuFile(netdev: string): string {
    return path.join(netdevDir(this.root, netdev), 'mtu');
  }

  private *netdevMtuText(netdev: string): ReadProgram<string | undefined> {
    const r = yield* read([attributeRead(this.mtuFile(netdev))]);
    return r.text(0)?.trim();
  }

  /** What the state reads watch from now on: the kept descriptors are reopened with it. */
  private remember(ref: PortRef, netdev: string | undefined, mtu: string | undefined): void {
    const key = portKey(ref);
    const before = this.netdevMtu.get(key);
    if (netdev === undefined) this.netdevMtu.delete(key);
    else this.netdevMtu.set(key, { netdev, mtu });
    if (before?.netdev !== netdev || before?.mtu !== mtu) this.release(key);
  }

  /** Opens the port's state files and keeps them (HeldState), then reads them. */
  private *stateOf(ref: PortRef, dir: string): ReadProgram<PortState | undefined> {
    const key = portKey(ref);
    const watched = this.netdevMtu.get(key);
    const files = [path.join(dir, 'state'), path.join(dir, 'phys_state'), ...(watched ? [this.mtuFile(watched.netdev)] : [])];
    const opened = yield* read([{ kind: 'stat', path: dir }, ...files.map((f): Op => ({ kind: 'open', path: f, flags: OPEN_FLAGS }))]);
    const fds = files.map((_, i) => opened.status(i + 1));
    const st = opened.stat(0);
    if (st === undefined || !isDirectoryMode(st.mode) || fds[0]! < 0) {
      closeAll(fds.filter((fd) => fd >= 0));
      return st !== undefined && isDirectoryMode(st.mode) ? { state: 'unknown', physState: undefined } : undefined;
    }
    // phys_state or the netdev's mtu may be missing: their reads are left out (-1).
    const ops: Op[] = [{ kind: 'stat', path: dir }, ...fds.filter((fd) => fd >= 0).map((fd): Op => ({ kind: 'pread', fd, offset: 0, max: ATTR_BYTES }))];
    let at = 1;
    const index = fds.map((fd) => (fd >= 0 ? at++ : -1));
    const h: HeldState = { dir, batch: new OpBatch(ops), fds: fds.filter((fd) => fd >= 0), index, ino: st.ino, mtu: watched?.mtu };
    this.held.set(key, h);
    return yield* this.heldStateOf(ref, h);
  }

  /** The state through the kept descriptors: the steady tick's read (a small generator: one per port per tick). */
  private *heldStateOf(ref: PortRef, h: HeldState): ReadProgram<PortState | undefined> {
    const r: Results = yield h.batch;
    const st = r.stat(0);
    if (st === undefined || !isDirectoryMode(st.mode)) {
      this.release(portKey(ref));
      return undefined;
    }
    if (st.ino !== h.ino) {
      // Re-created (driver reload): the kept descriptors read the old files.
      this.release(portKey(ref));
      const now = yield* this.stateOf(ref, h.dir);
      return now && { ...now, recreated: true };
    }
    return unchanged(r, h) ? h.last!.state : decodeState(r, h);
  }
}

/** Whether the kept files read the same bytes as last time (then their state stands). */
function unchanged(r: Results, h: HeldState): boolean {
  const last = h.last;
  if (last === undefined) return false;
  for (let k = 0; k < last.bytes.length; k++) if (!r.sameBytes(k + 1, last.bytes[k]!)) return false;
  return true;
}

/** The state the kept files say, remembered with their bytes when every file answered. */
function decodeState(r: Results, h: HeldState): PortState {
  const files = h.batch.length - 1;
  const text = (i: number): string | undefined => (h.index[i]! < 0 ? undefined : r.text(h.index[i]!)?.trim());
  const now = { state: parseNumberedName(text(0)) ?? 'unknown', physState: parseNumberedName(text(1)) };
  const state = h.index.length > 2 && text(2) !== h.mtu ? { ...now, attributesStale: true } : now;
  let ok = true;
  for (let k = 1; k <= files; k++) ok &&= r.ok(k);
  // A failure is decoded every time, never remembered.
  h.last = ok ? { bytes: Array.from({ length: files }, (_, k) => Uint8Array.from(r.bytes(k + 1))), state } : undefined;
  return state;
}

/** sysfs has no active_mtu file; derive it from the netdev MTU as the driver does. */
function roceMtu(text: string | undefined, rxe: boolean): number | undefined {
  const mtu = Number(text);
  if (text === undefined || text === '' || !Number.isInteger(mtu)) return undefined;
  return roceActiveMtu(mtu, rxe ? 'rxe' : 'iboe');
}

const OPEN_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK;

function closeAll(fds: readonly number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
}

interface GidScan {
  readonly netdev: string | undefined;
  /** The ndevs/ entry that named it. */
  readonly ndevIndex: string | undefined;
  readonly gidTypes: readonly string[];
}

/** What a one-round refresh read besides the attribute files (Guess), as text. */
interface GuessedReads {
  /** types/<i> of the table's first chunk. */
  readonly types: readonly (string | undefined)[];
  readonly ndev: { readonly index: string; readonly text: string | undefined } | undefined;
  readonly mtu: { readonly netdev: string; readonly text: string | undefined } | undefined;
}

/**
 * First named netdev in gid_attrs/ndevs/<i> and the distinct gid_attrs/types/<i>, GID_CHUNK
 * entries a round; a used entry names its netdev, so ndevs/ is read only while none was found,
 * and then only beside entries whose type says they are used. The rounds' batches are the
 * plan's, built the first time each is needed. `guessed`: the first chunk's types were read
 * already, and the ndevs/ entry that named the netdev last time; that answer stands when the
 * entry is still the first used one (it is what reading from there finds first).
 */
function* scanGids(plan: AttributePlan, indices: readonly string[], guessed?: GuessedReads): ReadProgram<GidScan> {
  const types = new Set<string>();
  const used: string[] = [];
  let misses = 0;
  for (let at = 0; at < indices.length && misses < GID_SCAN_GIVE_UP; at += GID_CHUNK) {
    const chunk = indices.slice(at, at + GID_CHUNK);
    const texts = at === 0 && guessed !== undefined ? guessed.types : textsOf(yield planned(plan, plan.typeDir, chunk), chunk.length);
    for (let k = 0; k < chunk.length && misses < GID_SCAN_GIVE_UP; k++) {
      const type = texts[k];
      if (type) {
        types.add(type);
        used.push(chunk[k]!);
      }
      misses = type ? 0 : misses + 1;
    }
  }
  const gidTypes = [...types];
  const ndev = guessed?.ndev;
  if (ndev !== undefined && ndev.index === used[0] && ndev.text !== undefined && isSafeName(ndev.text)) {
    return { netdev: ndev.text, ndevIndex: ndev.index, gidTypes };
  }
  for (let at = 0; at < used.length; at += NDEV_CHUNK) {
    const chunk = used.slice(at, at + NDEV_CHUNK);
    const texts = textsOf(yield planned(plan, plan.ndevDir, chunk), chunk.length);
    const k = texts.findIndex((n) => n !== undefined && isSafeName(n));
    if (k >= 0) return { netdev: texts[k], ndevIndex: chunk[k], gidTypes };
  }
  return { netdev: undefined, ndevIndex: undefined, gidTypes };
}

/** The trimmed texts of a round's first `n` reads (undefined where one failed). */
function textsOf(r: Results, n: number): (string | undefined)[] {
  return Array.from({ length: n }, (_, k) => r.text(k)?.trim());
}

/** The batch reading `dir`/<i> for each index of `chunk`, kept in the plan. */
function planned(plan: AttributePlan, dir: string, chunk: readonly string[]): OpBatch {
  const k = `${dir}\0${chunk.join(',')}`;
  let b = plan.batches.get(k);
  if (b === undefined) {
    if (plan.batches.size >= MAX_PLANNED_BATCHES) plan.batches.clear();
    b = new OpBatch(chunk.map((i) => attributeRead(path.join(dir, i))));
    plan.batches.set(k, b);
  }
  return b;
}
