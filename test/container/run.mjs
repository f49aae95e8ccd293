// The container image, built and run for real (npm run test:container; .ci/run runs it):
// deploy/container/build.sh builds the base (mmdebstrap, Debian's mirror) and the image with
// podman; then the image's `version`, `check` on a fixture sysfs tree, and `serve` scraped over
// HTTP on the host network. Prints the build times and the image size.
//
// This machine kind runs cgroup v1 with one controller (hugetlb) on the v2 hierarchy, which
// crun refuses ("cgroups in hybrid mode not supported"), and its RLIMIT_NOFILE/NPROC hard limits
// are below podman's defaults ("setrlimit: Operation not permitted"): containers run with runc
// and explicit ulimits. Building needs neither: the Containerfile has no RUN step.
import { spawnSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

const missing = ['podman', 'mmdebstrap', 'runc'].filter((t) => run('sh', ['-c', `command -v ${t}`]).status !== 0);
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

const chk = run('podman', [...RUN, ...FIXTURE, IMAGE, 'check', '--config.file=/etc/mxl-fabric-exporter/example.yaml', '--path.sysfs=/host/sys']);
check('check in the image on the mlx5_roce fixture: provisioning ok, exit 0', chk.status === 0 && chk.stdout.includes('provisioning: ok'), chk.stdout + chk.stderr);

const port = await new Promise((resolve) => {
  const srv = createServer().listen(0, '127.0.0.1', () => {
    const p = srv.address().port;
    srv.close(() => resolve(p));
  });
});
const name = `mfe-test-${process.pid}`;
const serve = spawn('podman', [...RUN, '--name', name, ...FIXTURE, IMAGE, 'serve', '--config.file=/etc/mxl-fabric-exporter/example.yaml',
  '--path.sysfs=/host/sys', `--web.listen-address=127.0.0.1:${port}`], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
serve.stderr.on('data', (d) => (log += d));
let metrics = '';
for (let i = 0; i < 60 && !metrics; i++) {
  await new Promise((r) => setTimeout(r, 500));
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    if (res.ok) metrics = await res.text();
  } catch {
    // not listening yet
  }
}
check('serve in the image answers /metrics with the fixture port up', /^mxl_fabric_port_up\{device="mlx5_0",port="1"\} 1$/m.test(metrics), log);
const page = metrics ? await (await fetch(`http://127.0.0.1:${port}/`)).text() : '';
check('and the landing page', page.includes('<h1>MXL Fabric Exporter</h1>'), page.slice(0, 200));
run('podman', ['stop', '--time', '5', name]);
await new Promise((r) => (serve.exitCode !== null ? r() : serve.once('exit', r)));
check('serve stops on SIGTERM', /msg="shutting down" signal=SIGTERM/.test(log), log);

console.log(`container: base ${baseSeconds} s, image ${buildSeconds} s, size ${(size / 1e6).toFixed(1)} MB`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
