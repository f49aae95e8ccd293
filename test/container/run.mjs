// The container image, built and run for real (npm run test:container; .ci/run runs it):
// deploy/container/build.sh builds the base (mmdebstrap, Debian's mirror) and the image with
// podman; then the image's `version`, `check` on a fixture sysfs tree, and `serve` scraped over
// HTTP on the host network: with its bounded reader (mxl_fabric_exporter_reads_bounded 1), and an
// MXL domain on a mount whose listing never returns (test/install/hungfs.c, FUSE, bind-mounted
// into the container) costing one read timeout; the packaged default config the image ships at
// /etc/mxl-fabric-exporter/config.yaml, checked and served. Prints the build times and the image size.
//
// This machine kind runs cgroup v1 with one controller (hugetlb) on the v2 hierarchy, which
// crun refuses ("cgroups in hybrid mode not supported"), and its RLIMIT_NOFILE/NPROC hard limits
// are below podman's defaults ("setrlimit: Operation not permitted"): containers run with runc
// and explicit ulimits. Building needs neither: the Containerfile has no RUN step.
import { spawnSync, spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hungfsMissing, mountHungfs } from '../install/hungfs.mjs';
import { freePort } from '../lib/free-port.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const IN_CI = Boolean(process.env.CI) && process.env.CI !== 'false' && process.env.CI !== '0';
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
const IMAGE = `localhost/mxl-fabric-exporter:${VERSION}`;
const BASE_IMAGE = 'localhost/mxl-fabric-exporter-base:trixie';
const RUN = ['--runtime', 'runc', 'run', '--rm', '--network=host', '--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];
const FIXTURE = ['-v', `${join(ROOT, 'test', 'fixtures', 'sysfs', 'mlx5_roce')}:/host/sys:ro`, '-v', `${join(ROOT, 'config')}:/etc/mxl-fabric-exporter:ro`];

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `\n     ${detail.trim().split('\n').join('\n     ')}`}`);
}

function run(cmd, args, opts = {}) {
  return spawnSync(cmd, args, { encoding: 'utf8', cwd: ROOT, ...opts });
}

// A serving container is kept (no --rm) until its log has been read from conmon's log file:
// `podman run` attached can exit before it has forwarded the container's last lines (seen in CI:
// exit 0 on SIGTERM, yet the attached stream lacked every line after "listening").
const SERVE_RUN = RUN.filter((a) => a !== '--rm');

/** SIGTERM (podman stop), then the exit code and the container's whole stderr, then removal. */
async function stopServe(name, child) {
  const stop = run('podman', ['stop', '--time', '5', name]);
  const code = await new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', (c) => r(c))));
  const logs = run('podman', ['logs', name]);
  run('podman', ['rm', '-f', name]);
  return { code, log: `${logs.stdout}${logs.stderr}`, stop: `${stop.stdout}${stop.stderr}`.trim() };
}

const missing = ['podman', 'mmdebstrap', 'runc'].filter((t) => run('sh', ['-c', `command -v ${t}`]).status !== 0);
const hungMissing = hungfsMissing();
if (hungMissing.length && IN_CI) missing.push(...hungMissing.map((m) => `${m} (for the hung mount)`));
if (missing.length) {
  const msg = `container test needs ${missing.join(', ')} (Debian packages podman, mmdebstrap, runc; .ci/run installs them)`;
  if (IN_CI) {
    console.log(`FAIL ${msg}\n0 passed, 1 failed`);
    process.exit(1);
  }
  console.log(`skipped: ${msg}`);
  process.exit(0);
}

const seconds = (t0) => ((performance.now() - t0) / 1000).toFixed(1);
// A fresh base every time, as on a new machine.
run('podman', ['rmi', '-f', BASE_IMAGE]);
let t0 = performance.now();
const base = run('bash', ['deploy/container/base.sh'], { env: { ...process.env, BASE_IMAGE } });
const baseSeconds = seconds(t0);
check(`base image from Debian's mirror (mmdebstrap) in ${baseSeconds} s`, base.status === 0, base.stderr);
t0 = performance.now();
const build = run('bash', ['deploy/container/build.sh'], { env: { ...process.env, BASE_IMAGE, IMAGE } });
const buildSeconds = seconds(t0);
check(`exporter image ${IMAGE} in ${buildSeconds} s`, build.status === 0, build.stdout + build.stderr);
if (build.status !== 0) {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(1);
}
const size = Number(run('podman', ['image', 'inspect', '--format', '{{.Size}}', IMAGE]).stdout.trim());
const baseSize = Number(run('podman', ['image', 'inspect', '--format', '{{.Size}}', BASE_IMAGE]).stdout.trim());
console.log(`     image size ${(size / 1e6).toFixed(1)} MB (base ${(baseSize / 1e6).toFixed(1)} MB, the exporter ${((size - baseSize) / 1e6).toFixed(1)} MB)`);

const revision = JSON.parse(readFileSync(join(ROOT, 'dist', 'build.json'), 'utf8')).revision;
const version = run('podman', [...RUN, IMAGE, 'version']);
check('version in the image names the revision, as nobody (65534)', version.status === 0 && version.stdout.includes(`(revision: ${revision})`)
  && run('podman', [...RUN, '--entrypoint', 'id', IMAGE, '-u']).stdout.trim() === '65534', version.stdout + version.stderr);

// The packaged default config (config/default.yaml) where CMD reads it, with nothing mounted over it.
const SYSFS_ONLY = FIXTURE.slice(0, 2);
const shipped = run('podman', [...RUN, '--entrypoint', 'cat', IMAGE, '/etc/mxl-fabric-exporter/config.yaml']);
check('the image ships config/default.yaml as /etc/mxl-fabric-exporter/config.yaml (bind: auto on /dev/shm/mxl)',
  shipped.status === 0 && shipped.stdout === readFileSync(join(ROOT, 'config', 'default.yaml'), 'utf8') && /^ {2}- \{ path: \/dev\/shm\/mxl, bind: auto \}$/m.test(shipped.stdout),
  shipped.stdout + shipped.stderr);
const chkDefault = run('podman', [...RUN, ...SYSFS_ONLY, IMAGE, 'check', '--path.sysfs=/host/sys']);
check('check in the image with its default config: valid, exit 0', chkDefault.status === 0 && /^config \/etc\/mxl-fabric-exporter\/config\.yaml: valid/m.test(chkDefault.stdout),
  chkDefault.stdout + chkDefault.stderr);

const chk = run('podman', [...RUN, ...FIXTURE, IMAGE, 'check', '--config.file=/etc/mxl-fabric-exporter/example.yaml', '--path.sysfs=/host/sys']);
check('check in the image on the mlx5_roce fixture: provisioning ok, exit 0', chk.status === 0 && chk.stdout.includes('provisioning: ok'), chk.stdout + chk.stderr);
check('check in the image: the bounded reader is loaded', /^ {2}OK {6}reader +bounded reader loaded/m.test(chk.stdout), chk.stdout);

// serve runs on the example plus one MXL domain on the hung mount (when it can be made).
const hung = hungMissing.length ? undefined : await mountHungfs();
if (!hung) console.log(`skipped: the hung-read check needs ${hungMissing.join(', ')}`);
const extra = mkdtempSync(join(tmpdir(), 'mfe-container-'));
chmodSync(extra, 0o755); // read by the image's uid 65534
cpSync(join(ROOT, 'config', 'flows'), join(extra, 'flows'), { recursive: true }); // flow files live under the config's folder
writeFileSync(join(extra, 'hung.yaml'), `${readFileSync(join(ROOT, 'config', 'example.yaml'), 'utf8')}
domains:
  - { path: /hung, device: mlx5_0, direction: rx }
`);
const SERVE_MOUNTS = [...FIXTURE, '-v', `${extra}:/etc/mfe-test:ro`, ...(hung ? ['-v', `${hung.mountpoint}:/hung:ro`] : [])];
const serveConfig = hung ? '/etc/mfe-test/hung.yaml' : '/etc/mxl-fabric-exporter/example.yaml';

const port = await freePort();
const name = `mfe-test-${process.pid}`;
const serve = spawn('podman', [...SERVE_RUN, '--name', name, ...SERVE_MOUNTS, IMAGE, 'serve', `--config.file=${serveConfig}`,
  '--path.sysfs=/host/sys', `--web.listen-address=127.0.0.1:${port}`], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
serve.stderr.on('data', (d) => (log += d));
let metrics = '';
const timeouts = () => Number(/^mxl_fabric_exporter_read_timeouts_total (\d+)$/m.exec(metrics)?.[1] ?? NaN);
// With the hung domain: until its first read has been given up.
for (let i = 0; i < 60 && !(metrics && (!hung || timeouts() >= 1)); i++) {
  await new Promise((r) => setTimeout(r, 500));
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    if (res.ok) metrics = await res.text();
  } catch {
    // not listening yet
  }
}
check('serve in the image answers /metrics with the fixture port up', /^mxl_fabric_port_up\{device="mlx5_0",port="1"\} 1$/m.test(metrics), log);
check('serve in the image reads on the bounded reader (reads_bounded 1)', /^mxl_fabric_exporter_reads_bounded 1$/m.test(metrics), metrics.split('\n').filter((l) => l.includes('reads_bounded')).join('\n') + log);
if (hung) {
  let ms = NaN;
  if (metrics) {
    await new Promise((r) => setTimeout(r, 3000));
    const t0 = performance.now();
    metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    ms = performance.now() - t0;
  }
  check(`the hung domain costs one read timeout in the image; /metrics answers in ${ms.toFixed(0)} ms`, timeouts() === 1 && ms < 500 && /read blocked; skipped until it returns/.test(log),
    `read_timeouts_total ${timeouts()}\n${log}`);
  await hung.unmount(); // the abandoned read returns (the connection is gone): the container can stop
}
rmSync(extra, { recursive: true, force: true });
const page = metrics ? await (await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined))?.text() ?? '' : '';
check('and the landing page', page.includes('<h1>MXL Fabric Exporter</h1>'), page.slice(0, 200));
const stopped = await stopServe(name, serve);
check('serve stops on SIGTERM (exit 0)', stopped.code === 0 && /msg="shutting down" signal=SIGTERM/.test(stopped.log),
  `exit ${stopped.code}; podman stop: ${stopped.stop}\n${stopped.log}`);

// serve with nothing but the image's default config (CMD's --config.file) and a node's empty MXL
// domain at /dev/shm/mxl: the fixture's port is found without being listed, the domain is read.
const shm = mkdtempSync(join(tmpdir(), 'mfe-shm-'));
chmodSync(shm, 0o755);
const port2 = await freePort();
const name2 = `mfe-test-default-${process.pid}`;
const serveDefault = spawn('podman', [...SERVE_RUN, '--name', name2, ...SYSFS_ONLY, '-v', `${shm}:/dev/shm/mxl:ro`, IMAGE, 'serve',
  '--config.file=/etc/mxl-fabric-exporter/config.yaml', '--path.sysfs=/host/sys', `--web.listen-address=127.0.0.1:${port2}`], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
let log2 = '';
serveDefault.stderr.on('data', (d) => (log2 += d));
let metrics2 = '';
for (let i = 0; i < 60 && !/^mxl_fabric_domain_up/m.test(metrics2); i++) {
  await new Promise((r) => setTimeout(r, 500));
  try {
    const res = await fetch(`http://127.0.0.1:${port2}/metrics`);
    if (res.ok) metrics2 = await res.text();
  } catch {
    // not listening yet
  }
}
check('serve in the image on its default config: the unlisted fixture port is measured (port_up 1) and /dev/shm/mxl read (domain_up 1)',
  /^mxl_fabric_port_up\{device="mlx5_0",port="1"\} 1$/m.test(metrics2) && /^mxl_fabric_domain_up\{domain="\/dev\/shm\/mxl"\} 1$/m.test(metrics2),
  metrics2.split('\n').filter((l) => /^mxl_fabric_(port_up|domain_up)/.test(l)).join('\n') + log2);
await stopServe(name2, serveDefault);
rmSync(shm, { recursive: true, force: true });

console.log(`container: base ${baseSeconds} s, image ${buildSeconds} s, size ${(size / 1e6).toFixed(1)} MB`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
