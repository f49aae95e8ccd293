/**
 * The full attribute reads (GID table, rate, MTU) are a safety net, once a minute per port: the
 * ports take turns, one tick each, instead of all 32 in one tick (that held the event loop ~38 ms
 * on the bench tree, issue 22). The port list is read at the start of each 60-tick period.
 */
import { describe, it, expect, afterEach } from 'vitest';
import * as fs from 'node:fs';
import { Sampler } from '../../src/sampler/sampler.js';
import { SysfsInventory, SysfsCountersSource } from '../../src/sources/sysfs/index.js';
import type { PortInventory, PortRef } from '../../src/sources/types.js';
import { portKey } from '../../src/sources/types.js';
import { fixture32 } from '../soak/sampler-cost.js';
import type { SysfsFixture } from '../fixtures/sysfs.js';

/** The sysfs inventory, counting the full attribute reads per port and the listings. */
function counting(inner: SysfsInventory): { inventory: PortInventory; attributeReads: string[]; listings: () => number } {
  const attributeReads: string[] = [];
  let listings = 0;
  const inventory: PortInventory = {
    kind: inner.kind,
    listReads: () => {
      listings++;
      return inner.listReads();
    },
    listChangedReads: (known) => inner.listChangedReads(known),
    attributeReads: (ref: PortRef) => {
      attributeReads.push(portKey(ref));
      return inner.attributeReads(ref);
    },
    stateReads: (ref) => inner.stateReads(ref),
    forget: (ref) => inner.forget(ref),
    close: () => inner.close(),
  };
  return { inventory, attributeReads, listings: () => listings };
}

let fx: SysfsFixture | undefined;
let sampler: Sampler | undefined;
afterEach(() => {
  sampler?.stop();
  fx?.cleanup();
  sampler = undefined;
  fx = undefined;
});

describe('attribute refresh', () => {
  it('reads every port in full on the first tick, then one port a tick, each once per 60 ticks', async () => {
    fx = fixture32();
    const sysfs = { sysfsRoot: fx.root };
    const c = counting(new SysfsInventory(sysfs));
    let t = 0n;
    sampler = new Sampler({ inventory: c.inventory, sources: [new SysfsCountersSource(sysfs)], intervalMs: 1000, windowMs: 10_000, reads: 'direct', clock: () => (t += 1_000_000_000n) });
    await sampler.tick();
    expect(sampler.ports.size).toBe(32);
    expect(c.attributeReads.length).toBe(32);
    const order = [...sampler.ports.keys()];

    const perTick: string[][] = [];
    for (let i = 1; i <= 120; i++) {
      const before = c.attributeReads.length;
      await sampler.tick();
      perTick.push(c.attributeReads.slice(before));
    }
    // Tick n reads port n % 60 (the 32 ports in list order), nothing on ticks 32..59 of a period.
    perTick.forEach((reads, k) => {
      const n = k + 1;
      expect(reads, `tick ${n}`).toEqual(n % 60 < 32 ? [order[n % 60]] : []);
    });
    expect(c.listings()).toBe(3); // ticks 0, 60 and 120
  });

  it('a rate that changed without a state change is seen at the port\'s turn', async () => {
    fx = fixture32();
    const sysfs = { sysfsRoot: fx.root };
    let t = 0n;
    sampler = new Sampler({ inventory: new SysfsInventory(sysfs), sources: [new SysfsCountersSource(sysfs)], intervalMs: 1000, windowMs: 10_000, reads: 'direct', clock: () => (t += 1_000_000_000n) });
    await sampler.tick();
    const [key, port] = [...sampler.ports.entries()][5]!;
    expect(port.attrs.rateBitsPerSecond).toBe(100e9);
    fs.writeFileSync(fx.portPath(port.ref.device, port.ref.port, 'rate'), '200 Gb/sec (4X HDR)\n');
    for (let i = 1; i < 5; i++) await sampler.tick();
    expect(sampler.ports.get(key)!.attrs.rateBitsPerSecond).toBe(100e9);
    await sampler.tick(); // tick 5: port 5's turn
    expect(sampler.ports.get(key)!.attrs.rateBitsPerSecond).toBe(200e9);
  });

  it('an active MTU that the state read answers (verbs) and that changed is read in full the same tick, not at the port\'s turn', async () => {
    fx = fixture32();
    const sysfs = { sysfsRoot: fx.root };
    const inner = new SysfsInventory(sysfs);
    // As VerbsInventory.stateReads: ibv_query_port gives the active MTU with the state. The
    // attributes' MTU comes from the netdev (sysfs), so both move when the netdev's does.
    let mtu = 4096;
    const c = counting(inner);
    const inventory: PortInventory = {
      ...c.inventory,
      stateReads: function* (ref: PortRef) {
        const st = yield* inner.stateReads(ref);
        return st && { state: st.state, physState: st.physState, activeIbMtu: mtu };
      },
      attributeReads: function* (ref: PortRef) {
        c.attributeReads.push(portKey(ref));
        const a = yield* inner.attributeReads(ref);
        return a && { ...a, activeIbMtu: mtu };
      },
    };
    let t = 0n;
    sampler = new Sampler({ inventory, sources: [new SysfsCountersSource(sysfs)], intervalMs: 1000, windowMs: 10_000, reads: 'direct', clock: () => (t += 1_000_000_000n) });
    await sampler.tick();
    const [key, port] = [...sampler.ports.entries()][40 % 32]!;
    expect(port.attrs.activeIbMtu).toBe(4096);
    for (let i = 1; i < 40; i++) await sampler.tick(); // past port 8's turn (tick 8)
    mtu = 1024;
    const before = c.attributeReads.length;
    await sampler.tick(); // tick 40: no port's turn
    expect(sampler.ports.get(key)!.attrs.activeIbMtu).toBe(1024);
    // every port's MTU moved in this stand-in: each is read in full once, at once
    expect(c.attributeReads.length - before).toBe(32);
  });
});
