// Checks the native probe (dist/sources/probe.js) against the real rxe devices in the guest:
// libibverbs sees rxe0 ACTIVE, Ethernet, active MTU 4096 with a RoCE v2 GID on veth0, and RDMA
// netlink's hw counters equal the sysfs files (read while the port is idle).
// usage: node check-native.mjs PROBE.json SYSFS_ROOT
import { readFileSync } from 'node:fs';

const [probeFile, sysfs] = process.argv.slice(2);
const probe = JSON.parse(readFileSync(probeFile, 'utf8'));
const problems = [];
const expect = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) problems.push(what);
};

expect(probe.verbs.available === true, `libibverbs available (${probe.verbs.error ?? 'yes'})`);
const rxe0 = probe.verbs.ports?.find((p) => p.device === 'rxe0' && p.port === 1);
expect(rxe0?.state === 'ACTIVE', `rxe0/1 state ACTIVE (got ${rxe0?.state})`);
expect(rxe0?.linkLayer === 'Ethernet', `rxe0/1 link layer Ethernet (got ${rxe0?.linkLayer})`);
expect(rxe0?.activeIbMtu === 4096, `rxe0/1 active MTU 4096 (got ${rxe0?.activeIbMtu})`);
const v2 = rxe0?.gids?.filter((g) => g.type === 'RoCE v2' && g.ndev === 'veth0') ?? [];
expect(v2.length > 0, `rxe0/1 has a RoCE v2 GID on veth0 (${v2.map((g) => `${g.index}:${g.gid}`).join(', ')})`);

expect(probe.netlink.available === true, `RDMA netlink available (${probe.netlink.error ?? 'yes'})`);
for (const device of ['rxe0', 'rxe1']) {
  const port = probe.netlink.ports?.find((p) => p.device === device && p.port === 1);
  expect(port !== undefined, `netlink reports ${device}/1`);
  for (const name of ['sent_pkts', 'rcvd_pkts']) {
    const file = readFileSync(`${sysfs}/class/infiniband/${device}/ports/1/hw_counters/${name}`, 'utf8').trim();
    expect(port?.counters?.[name] === file, `${device} ${name}: netlink ${port?.counters?.[name]} = sysfs ${file}`);
  }
}
process.exit(problems.length ? 1 : 0);
