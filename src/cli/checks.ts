/**
 * The pre-show checks of `check`, one small named check per concern. Each looks at one port as
 * the host has it (attributes, netdev MTU, the ports there are) against its plan (the config's
 * flows and the flows found in MXL domains, predicted by the model) and says ok, fail or
 * unknown; the host-assumption checks (pfc, ecn, vlan: src/health/check.ts) say warn instead of
 * failing. One more check is one more entry in PORT_CHECKS.
 */
import * as path from 'node:path';
import { IB_MTUS, l3Mtu, payloadPerPacket, toNumber } from '../model/index.js';
import type { DomainConfig } from '../config/types.js';
import type { PortPlan } from '../predictions/plan.js';
import { type PortAttributes, type Direction, DIRECTIONS, portKey } from '../sources/types.js';
import { driverReads } from '../sources/sysfs/driver.js';
import { netdevDir } from '../sources/sysfs/paths.js';
import { readText, runSync } from '../reads/program.js';
import { roceActiveMtu, type RoceMtuRule } from '../sources/sysfs/parse.js';
import { formatDataRate, type RateUnits } from '../input/units.js';
import type { SampledPort } from '../sampler/sampler.js';
import type { PortAssumptions } from '../health/assumptions.js';
import { ecnFinding, pfcFinding, vlanFinding } from '../health/check.js';

/** `warn` is reported but does not fail provisioning (host assumptions, docs/fabric-health.md). */
export type Verdict = 'ok' | 'warn' | 'fail' | 'unknown';

export interface Finding {
  readonly check: string;
  readonly verdict: Verdict;
  readonly detail: string;
  /** The numbers behind the verdict, as numbers (bytes, bytes per second, ratios). */
  readonly values?: Readonly<Record<string, number | string | boolean | null>>;
}

/** What one domain held when `check` looked. */
export interface DomainSummary {
  readonly domain: DomainConfig;
  readonly error: string | undefined;
  readonly found: number;
  readonly selected: number;
  readonly unusable: readonly string[];
  readonly writersActive: number | undefined;
}

export interface PortContext {
  readonly plan: PortPlan;
  /** Undefined: the host has no such port. */
  readonly attrs: PortAttributes | undefined;
  /** The port's one sample (its counters); undefined when the host has no such port. */
  readonly sample: SampledPort | undefined;
  /** VLAN and PFC of the port's netdev (src/health/assumptions.ts); undefined when the host has no such port. */
  readonly assumptions: PortAssumptions | undefined;
  /** Every port the host has, for "did you mean". */
  readonly hostPorts: readonly PortAttributes[];
  readonly sysfsRoot: string;
  readonly domains: readonly DomainSummary[];
  readonly units: RateUnits;
}

export interface PortCheck {
  readonly name: string;
  run(ctx: PortContext): Finding[];
}

/** A rate in the chosen units, with the other one beside it: "12.500 GB/s (100 Gb/s)". */
const both = (bytesPerSecond: number, units: RateUnits): string =>
  `${formatDataRate(bytesPerSecond, units)} (${formatDataRate(bytesPerSecond, units === 'bits' ? 'bytes' : 'bits')})`;

const present: PortCheck = {
  name: 'present',
  run: ({ attrs, hostPorts, sysfsRoot }) => {
    if (attrs) return [{ check: 'present', verdict: 'ok', detail: `found (attributes from ${attrs.attributeSource})` }];
    const here = hostPorts.map((p) => portKey(p)).join(', ');
    return [{
      check: 'present', verdict: 'fail',
      detail: here ? `port not found on this host; RDMA ports here: ${here}` : `port not found; this host has no RDMA port (${sysfsRoot}/class/infiniband)`,
    }];
  },
};

const state: PortCheck = {
  name: 'state',
  run: ({ attrs }) => attrs
    ? [{ check: 'state', verdict: attrs.state === 'ACTIVE' ? 'ok' : 'fail', detail: `state ${attrs.state}${attrs.physState ? ` (${attrs.physState})` : ''}` }]
    : [],
};

/** The rdma_rocev2 profiles count RoCE v2 headers (IPv4 + UDP): the port needs a RoCE v2 GID. */
const gidType: PortCheck = {
  name: 'gid',
  run: ({ attrs }) => {
    if (!attrs || attrs.linkLayer !== 'Ethernet') return [];
    const types = attrs.gidTypes.join(', ') || 'none';
    return attrs.gidTypes.includes('RoCE v2')
      ? [{ check: 'gid', verdict: 'ok', detail: `RoCE v2 GID present (types: ${types})` }]
      : [{ check: 'gid', verdict: 'fail', detail: `no RoCE v2 GID (types: ${types}): RoCE v2 GIDs come from the netdev's IP addresses; is ${attrs.netdev ?? 'the netdev'} up with an address?` }];
  },
};

/** Configured capacity above the rate the link trained at is a link (or config) problem. */
const linkRate: PortCheck = {
  name: 'link-rate',
  run: ({ plan, attrs, units }) => {
    const rate = attrs?.rateBitsPerSecond;
    const values = { linkBytesPerSecond: rate === undefined ? null : rate / 8, capacityBytesPerSecond: plan.capacityBytesPerSecond ?? null };
    if (!attrs) return [];
    if (rate === undefined) return [{ check: 'link-rate', verdict: 'unknown', detail: 'the port reports no link rate' }];
    if (plan.capacityFrom !== 'config') {
      return [{ check: 'link-rate', verdict: 'ok', detail: `link rate ${both(rate / 8, units)}; capacity: auto uses it`, values }];
    }
    const configured = plan.capacityBytesPerSecond!;
    if (configured > rate / 8) {
      return [{
        check: 'link-rate', verdict: 'fail', values,
        detail: `configured capacity ${both(configured, units)} is above the link's trained rate ${both(rate / 8, units)}: a link that trained low (cable, transceiver, switch port), or a wrong capacity`,
      }];
    }
    return [{ check: 'link-rate', verdict: 'ok', detail: `configured capacity ${both(configured, units)} within the link rate ${both(rate / 8, units)}`, values }];
  },
};

const modelPayload = (plan: PortPlan): number | undefined => (plan.mtu ? payloadPerPacket(plan.mtu, plan.port.provider) : undefined);

const ibMtu: PortCheck = {
  name: 'ib-mtu',
  run: ({ plan, attrs }) => {
    const active = attrs?.activeIbMtu;
    const payload = modelPayload(plan);
    if (payload === undefined) return [{ check: 'ib-mtu', verdict: 'unknown', detail: 'mtu: auto, but the port reports no active MTU' }];
    const values = { activeIbMtuBytes: active ?? null, modelPayloadBytesPerPacket: payload };
    if (active === undefined) return attrs ? [{ check: 'ib-mtu', verdict: 'unknown', detail: `model assumes ${payload} B payload per packet; active MTU unknown`, values }] : [];
    if (active < payload) {
      return [{ check: 'ib-mtu', verdict: 'fail', values, detail: `active IB MTU ${active} is below the model's ${payload} B payload per packet: more packets than predicted` }];
    }
    return [{ check: 'ib-mtu', verdict: 'ok', detail: `active IB MTU ${active}, model payload per packet ${payload}`, values }];
  },
};

/**
 * RoCE takes its IB MTU from the netdev MTU minus its headers (96 B, iboe_get_mtu() in
 * include/rdma/ib_addr.h; 80 B on rxe): the netdev must leave room for the IB MTU the model's
 * packets need.
 */
/** Room for a netdev's mtu file (a decimal number and a newline). */
const MTU_TEXT_BYTES = 64;

const netdevMtu: PortCheck = {
  name: 'netdev-mtu',
  run: ({ plan, attrs, sysfsRoot }) => {
    if (!attrs || attrs.linkLayer !== 'Ethernet' || !attrs.netdev) return [];
    const payload = modelPayload(plan);
    const read = runSync(readText(path.join(netdevDir(sysfsRoot, attrs.netdev), 'mtu'), MTU_TEXT_BYTES, MTU_TEXT_BYTES));
    const text = read.ok ? read.text.trim() : undefined;
    const mtu = text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
    if (mtu === undefined) return [{ check: 'netdev-mtu', verdict: 'unknown', detail: `MTU of ${attrs.netdev} unreadable` }];
    if (payload === undefined) return [{ check: 'netdev-mtu', verdict: 'ok', detail: `${attrs.netdev} MTU ${mtu} (mtu: auto follows it)`, values: { netdevMtuBytes: mtu } }];
    const rule: RoceMtuRule = runSync(driverReads(sysfsRoot, attrs.device)) === 'rxe' ? 'rxe' : 'iboe';
    const ib = roceActiveMtu(mtu, rule);
    const neededIb = IB_MTUS.find((m) => m >= payload);
    const needed = neededIb === undefined ? undefined : neededIb + (rule === 'rxe' ? 80 : 96);
    const values = { netdevMtuBytes: mtu, modelL3MtuBytes: l3Mtu(plan.mtu!, plan.port.provider), modelPayloadBytesPerPacket: payload, neededNetdevMtuBytes: needed ?? null };
    if (ib !== undefined && ib >= payload) {
      return [{ check: 'netdev-mtu', verdict: 'ok', detail: `${attrs.netdev} MTU ${mtu} gives IB MTU ${ib}, enough for ${payload} B per packet`, values }];
    }
    return [{
      check: 'netdev-mtu', verdict: 'fail', values,
      detail: `${attrs.netdev} MTU ${mtu} gives IB MTU ${ib ?? 'none'}, below the model's ${payload} B payload per packet; ` +
        (needed ? `set it to at least ${needed} (9000 for jumbo frames)` : 'no IB MTU carries that payload: lower the model\'s mtu'),
    }];
  },
};

const capacity: PortCheck = {
  name: 'capacity',
  run: ({ plan, units }) => DIRECTIONS.map((direction) => capacityFinding(plan, direction, units)),
};

function capacityFinding(plan: PortPlan, direction: Direction, units: RateUnits): Finding {
  const t = plan.totals[direction];
  const cap = plan.capacityBytesPerSecond;
  const headroom = plan.port.headroom;
  if (!t) return { check: 'capacity', verdict: 'unknown', detail: `${direction}: MTU unknown, nothing predicted`, values: { direction } };
  const wire = t.bytesPerSecond.wire;
  const values = { direction, flows: t.flows, predictedWireBytesPerSecond: wire, capacityBytesPerSecond: cap ?? null, headroom };
  const head = `${direction}: ${formatDataRate(wire, units)} predicted ${whatCounts(plan, direction, t.flows)}`;
  if (cap === undefined) return { check: 'capacity', verdict: 'unknown', detail: `${head}; capacity unknown`, values };
  const share = wire / cap;
  const budget = cap * headroom;
  const ok = share <= headroom;
  const margin = ok ? `${formatDataRate(budget - wire, units)} to spare` : `over the budget by ${formatDataRate(wire - budget, units)}`;
  const detail = `${head}; budget ${formatDataRate(budget, units)} (capacity ${both(cap, units)} x headroom ${(headroom * 100).toFixed(0)} %): ` +
    `${(share * 100).toFixed(2)} % of capacity, ${margin}`;
  return { check: 'capacity', verdict: ok ? 'ok' : 'fail', detail, values: { ...values, utilization: share, budgetBytesPerSecond: budget, excessBytesPerSecond: wire - budget } };
}

/** "for 3 flows", "for 2 flows and the ACKs of 1 rx flow", "for no rx flow: the ACKs of 3 tx flows". */
function whatCounts(plan: PortPlan, direction: Direction, flows: number): string {
  const other = direction === 'tx' ? 'rx' : 'tx';
  const acked = plan.flows.filter((f) => f.binding.direction === other && f.prediction && toNumber(f.prediction.reverse.bytesPerSecond.wire) > 0).length;
  const n = (k: number, dir: string): string => `${k} ${dir} flow${k === 1 ? '' : 's'}`;
  if (acked === 0) return `for ${flows} flow${flows === 1 ? '' : 's'}`;
  if (flows === 0) return `for no ${direction} flow: the ACKs of ${n(acked, other)}`;
  return `for ${n(flows, direction)} and the ACKs of ${n(acked, other)}`;
}

/** Flows found in the MXL domains bound to this port are part of its predictions above. */
const domainFlows: PortCheck = {
  name: 'domain',
  run: ({ plan, domains }) => domains
    .filter((d) => d.domain.bind !== 'auto' && d.domain.device === plan.port.device && d.domain.port === plan.port.port)
    .map((d): Finding => {
      const where = `${d.domain.path} (${d.domain.direction})`;
      const values = { path: d.domain.path, direction: d.domain.direction ?? 'auto', flowsFound: d.found, flowsSelected: d.selected, flowsUnusable: d.unusable.length };
      if (d.error) return { check: 'domain', verdict: 'fail', detail: `${where}: cannot list it: ${d.error}`, values };
      const writers = d.writersActive === undefined ? '' : `, ${d.writersActive} with a writer`;
      const unusable = d.unusable.length ? `; unusable flow_def.json: ${d.unusable.join(', ')}` : '';
      return {
        check: 'domain', verdict: d.unusable.length ? 'fail' : 'ok', values,
        detail: `${where}: ${d.found} flow${d.found === 1 ? '' : 's'} found, ${d.selected} selected and included${writers}${unusable}`,
      };
    }),
};

/** PFC on some priority of the RoCE netdev, where DCB netlink answers. */
const pfc: PortCheck = {
  name: 'pfc',
  run: ({ assumptions }) => (assumptions ? [pfcFinding(assumptions)] : []),
};

/** CNPs handled, not only ignored: the adapter reacts to ECN marks. */
const ecn: PortCheck = {
  name: 'ecn',
  run: ({ sample }) => (sample ? [ecnFinding(sample)] : []),
};

/** An 802.1Q netdev needs the profile's l2HeaderBytes to count the tag, and only then. */
const vlan: PortCheck = {
  name: 'vlan',
  run: ({ plan, assumptions }) => (assumptions ? [vlanFinding(assumptions, plan.port.provider.l2HeaderBytes)] : []),
};

/** In report order. */
export const PORT_CHECKS: readonly PortCheck[] = [present, state, gidType, linkRate, ibMtu, netdevMtu, domainFlows, capacity, pfc, ecn, vlan];

export function runPortChecks(ctx: PortContext, checks: readonly PortCheck[] = PORT_CHECKS): Finding[] {
  return checks.flatMap((c) => c.run(ctx));
}
