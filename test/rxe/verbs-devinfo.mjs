// The `ethtool` scenario's libibverbs check, run INSIDE the guest: every rxe port as the reader's
// libibverbs ops answer it (verbsOpen, verbsQueryPort, verbsQueryGids, on libmfe-reader's threads)
// against `ibv_devinfo -v` (rdma-core libibverbs/examples/devinfo.c): state, physical state,
// active MTU, link layer, active width and speed (as the rate they make), and every GID with its
// type. Prints one line per check; exits 1 on any difference.
// usage: node test/rxe/verbs-devinfo.mjs IBV_DEVINFO_V.txt
import { readFileSync } from 'node:fs';
import { BoundedReads } from '../../dist/reads/bounded.js';
import { runSync } from '../../dist/reads/program.js';
import {
  mtuBytes, openVerbsReads, physStateName, portRateBitsPerSecond, portStateName, gidTypeName,
} from '../../dist/sources/verbs/index.js';

const problems = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) problems.push(what);
};

/** hca_id blocks, their port blocks, the "(N)" enum of each field and the GID lines. */
function parseDevinfo(text) {
  const ports = [];
  let device;
  let port;
  for (const line of text.split('\n')) {
    let m;
    if ((m = /^hca_id:\s+(\S+)/.exec(line))) device = m[1];
    else if ((m = /^\s+port:\s+(\d+)/.exec(line))) ports.push((port = { device, port: Number(m[1]), gids: [] }));
    else if (port && (m = /^\s+GID\[\s*(\d+)\]:\s+([^,\s]+)(?:,\s*(.+?))?\s*$/.exec(line))) port.gids.push({ index: Number(m[1]), gid: gidBytes(m[2]), type: m[3] });
    else if (port && (m = /^\s+(state|phys_state|active_mtu|active_width|active_speed):\s+.*\((\d+)\)\s*$/.exec(line))) port[m[1]] = Number(m[2]);
    else if (port && (m = /^\s+link_layer:\s+(\S+)/.exec(line))) port.link_layer = m[1];
  }
  return ports;
}

/** A GID as devinfo prints it (eight hex groups, or ::ffff:a.b.c.d for an IPv4-mapped one) as 32 hex digits. */
function gidBytes(text) {
  let groups = text;
  const v4 = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) groups = `${v4[1]}${((+v4[2] << 8) | +v4[3]).toString(16)}:${((+v4[4] << 8) | +v4[5]).toString(16)}`;
  const [head, tail] = groups.includes('::') ? groups.split('::') : [groups, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const all = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return all.map((g) => g.padStart(4, '0')).join('');
}

const devinfo = parseDevinfo(readFileSync(process.argv[2], 'utf8'));
check(devinfo.length > 0, `ibv_devinfo -v lists ${devinfo.length} ports (${devinfo.map((p) => `${p.device}/${p.port}`).join(', ')})`);

const reader = new BoundedReads({ readTimeoutMs: 2000 });
check(reader.mode === 'native', `reads on libmfe-reader's threads (mode ${reader.mode})`);
const [opened] = await reader.run([{ group: 'verbs devices', program: openVerbsReads() }]);
check(opened.kind === 'done' && opened.value.ok, `verbsOpen opened the devices (${opened.kind === 'done' ? (opened.value.ok ? 'ok' : opened.value.error.message) : opened.kind})`);
const inv = opened.kind === 'done' && opened.value.ok ? opened.value.inventory : undefined;
const refs = inv ? runSync(inv.listReads()) : [];
check(refs.map((r) => `${r.device}/${r.port}`).join(',') === devinfo.map((p) => `${p.device}/${p.port}`).join(','), `the same ports: ${refs.map((r) => `${r.device}/${r.port}`).join(', ')}`);

const jobs = refs.flatMap((ref) => [
  { group: `${ref.device}/${ref.port}`, program: inv.attributeReads(ref) },
  { group: `${ref.device}/${ref.port}`, program: inv.gidReads(ref) },
  { group: `${ref.device}/${ref.port}`, program: inv.stateReads(ref) },
]);
const outcomes = await reader.run(jobs);
check(reader.timeouts === 0, `no read timed out (${reader.timeouts})`);
refs.forEach((ref, i) => {
  const want = devinfo.find((p) => p.device === ref.device && p.port === ref.port);
  const [a, g, s] = outcomes.slice(i * 3, i * 3 + 3).map((o) => (o.kind === 'done' ? o.value : undefined));
  const name = `${ref.device}/${ref.port}`;
  if (!want || !a || !g || !s) return check(false, `${name}: read (${outcomes.slice(i * 3, i * 3 + 3).map((o) => o.kind).join(', ')})`);
  check(a.state === portStateName(want.state) && s.state === a.state, `${name} state: ${a.state} (stateReads ${s.state}) = devinfo ${want.state}`);
  check(a.physState === physStateName(want.phys_state), `${name} phys_state: ${a.physState} = devinfo ${want.phys_state}`);
  check(a.activeIbMtu === mtuBytes(want.active_mtu), `${name} active_mtu: ${a.activeIbMtu} = devinfo ${want.active_mtu}`);
  check(a.linkLayer === want.link_layer, `${name} link_layer: ${a.linkLayer} = devinfo ${want.link_layer}`);
  const rate = portRateBitsPerSecond({ activeWidth: want.active_width, activeSpeed: want.active_speed, activeSpeedEx: undefined });
  check(a.rateBitsPerSecond === rate, `${name} rate: ${a.rateBitsPerSecond} b/s = devinfo width ${want.active_width} x speed ${want.active_speed} (${rate})`);
  const ours = g.map((e) => `${e.gidIndex} ${e.gidText.replaceAll(':', '')} ${gidTypeName(e.gidType)}`).join('; ');
  const theirs = want.gids.map((e) => `${e.index} ${e.gid} ${e.type}`).join('; ');
  check(ours === theirs && g.length > 0, `${name} GIDs: ${ours} = devinfo ${theirs}`);
  const types = [...new Set(want.gids.map((e) => e.type))];
  check(JSON.stringify(a.gidTypes) === JSON.stringify(types), `${name} GID types: ${a.gidTypes.join(', ')} = devinfo ${types.join(', ')}`);
});
inv?.close();
reader.close();
process.exit(problems.length ? 1 : 0);
