// A real Prometheus on the host for the soft-RoCE scenarios: scrapes the exporter(s) in the guest
// through qemu's hostfwd every second and evaluates the project's rules with shortened `for:`.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import YAML from 'yaml';

const REPO = new URL('../../..', import.meta.url).pathname;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The project's rule files with every `for:` set to `forDuration` and 1 s evaluation, written to `dir`. */
export function testRules(dir, forDuration) {
  const rulesDir = process.env.RXE_RULES_DIR ?? join(REPO, 'deploy/prometheus/rules');
  const files = ['alerts.yml', 'recording.yml'].map((f) => join(rulesDir, f));
  const missing = files.filter((f) => !existsSync(f));
  if (missing.length) throw new Error(`missing rule files: ${missing.join(', ')}`);
  return files.map((file) => {
    const doc = YAML.parse(readFileSync(file, 'utf8'));
    for (const g of doc.groups) {
      g.interval = '1s';
      for (const r of g.rules) if (r.for) r.for = forDuration;
    }
    const target = join(dir, `test-${file.split('/').pop()}`);
    writeFileSync(target, YAML.stringify(doc));
    return target;
  });
}

/**
 * Starts Prometheus scraping `targets` (job mxl-fabric-exporter) with `ruleFiles`; resolves when
 * ready. A busy emulated guest can take a second to answer: a failed scrape marks every series
 * stale and restarts pending alerts, so give it `scrapeSeconds` (interval = timeout).
 * `opts.alertmanager`: host:port its alerts go to; `opts.metricRelabel`: the job's metric_relabel_configs. The handle's `stop()` ends it (SIGTERM) and
 * `restart()` starts it again on the same port and TSDB.
 */
export async function startPrometheus(dir, targets, ruleFiles, scrapeSeconds = 1, opts = {}) {
  const port = await freePort();
  const config = {
    global: { scrape_interval: `${scrapeSeconds}s`, scrape_timeout: `${scrapeSeconds}s`, evaluation_interval: '1s' },
    rule_files: ruleFiles,
    scrape_configs: [{ job_name: 'mxl-fabric-exporter', static_configs: [{ targets }], ...(opts.metricRelabel ? { metric_relabel_configs: opts.metricRelabel } : {}) }],
    ...(opts.alertmanager ? { alerting: { alertmanagers: [{ static_configs: [{ targets: [opts.alertmanager] }] }] } } : {}),
  };
  writeFileSync(join(dir, 'prometheus.yml'), YAML.stringify(config));
  const base = `http://127.0.0.1:${port}`;
  const handle = { proc: undefined, base, query: (q) => query(base, q), stop: () => stopProc(handle.proc), restart: undefined };
  const launch = async () => {
    const proc = spawn('prometheus', [
      `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`, '--storage.tsdb.retention.time=1h', '--log.level=warn',
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    proc.stderr.on('data', (d) => writeFileSync(join(dir, 'prometheus.log'), d, { flag: 'a' }));
    handle.proc = proc;
    for (let i = 0; i < 150; i++) {
      try {
        if ((await fetch(`${base}/-/ready`)).ok) return handle;
      } catch { /* starting */ }
      await sleep(200);
    }
    proc.kill('SIGTERM');
    throw new Error('prometheus did not become ready');
  };
  handle.restart = async () => { await handle.stop(); return launch(); };
  return launch();
}

function stopProc(proc) {
  return new Promise((resolve) => {
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.once('exit', () => { clearTimeout(timer); resolve(); });
    proc.kill('SIGTERM');
  });
}

/** An instant query: [{ labels, value }]. */
export async function query(base, q) {
  const r = await (await fetch(`${base}/api/v1/query?query=${encodeURIComponent(q)}`)).json();
  if (r.status !== 'success') throw new Error(`query ${q}: ${r.error}`);
  return r.data.result.map((s) => ({ labels: s.metric, value: Number(s.value[1]) }));
}
