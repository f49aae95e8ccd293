/**
 * test/rxe/faults/scale.mjs: Prometheus durations (compound, strict), PromQL windows, subqueries
 * and offsets divided by the factor, the shipped rule files and Alertmanager config scaled rule by
 * rule and route by route (labels, annotations and inhibitions unchanged), the output accepted by
 * promtool and amtool, and the CLI's usage errors.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import {
  KEPT_WINDOWS, SHIPPED_ALERTMANAGER, SHIPPED_RULES, checkFactor, durationMs, formatMs, pageDelayMs, scaleAlertmanager, scaleDuration,
  scaleExpr, scaleRules, writeScaled,
} from '../rxe/faults/scale.mjs';
import { needs, ROOT, tool } from '../deploy/tools.js';

const promtool = tool('promtool', 'prometheus');
const amtool = tool('amtool', 'prometheus-alertmanager');
const SCALE = join(ROOT, 'test', 'rxe', 'faults', 'scale.mjs');

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'mfe-scale-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Rule { alert?: string; record?: string; expr: string; for?: string; keep_firing_for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
interface RuleFile { groups: { name: string; interval?: string; rules: Rule[] }[] }
interface Route { receiver?: string; group_wait?: string; group_interval?: string; repeat_interval?: string; routes?: Route[]; [k: string]: unknown }
interface AmConfig { global?: Record<string, unknown>; route: Route; inhibit_rules?: unknown[]; receivers: { name: string; [k: string]: unknown }[] }
const load = <T>(file: string): T => parse(readFileSync(file, 'utf8')) as T;

describe('durationMs', () => {
  it('reads compound Prometheus durations, largest unit first', () => {
    expect(durationMs('1h30m')).toBe(5_400_000);
    expect(durationMs('500ms')).toBe(500);
    expect(durationMs('1m')).toBe(60_000);
    expect(durationMs('1ms')).toBe(1);
    expect(durationMs('1m1ms')).toBe(60_001);
    expect(durationMs('2m30s')).toBe(150_000);
    expect(durationMs('1d2h')).toBe(93_600_000);
    expect(durationMs('1w')).toBe(604_800_000);
    expect(durationMs('1y')).toBe(31_536_000_000);
    expect(durationMs('0s')).toBe(0);
  });
  it.each(['5', '', '5x', '1m1h', '1s1s', '1.5m', '-5m', ' 5m', '5M', '30ms1s'])('rejects %j, naming it', (text) => {
    expect(() => durationMs(text)).toThrow(`not a duration: ${JSON.stringify(text)}`);
  });
  it('rejects what is not a string', () => {
    expect(() => durationMs(300)).toThrow('not a duration: 300');
    expect(() => durationMs(undefined)).toThrow('not a duration');
  });
});

describe('formatMs, scaleDuration, checkFactor', () => {
  it('whole seconds as s, the rest as ms', () => {
    expect(formatMs(6000)).toBe('6s');
    expect(formatMs(1440_000)).toBe('1440s');
    expect(formatMs(1500)).toBe('1500ms');
    expect(() => formatMs(0)).toThrow('above 0');
    expect(() => formatMs(1.5)).toThrow('whole number');
  });
  it('divides by the factor, rounding to the ms and never below 1 ms; a zero duration stays 0s', () => {
    expect(scaleDuration('5m', 10)).toBe('30s');
    expect(scaleDuration('1h30m', 10)).toBe('540s');
    expect(scaleDuration('5m', 7)).toBe('42857ms');
    expect(scaleDuration('1m', 1)).toBe('60s');
    expect(scaleDuration('500ms', 3)).toBe('167ms');
    expect(scaleDuration('1ms', 10)).toBe('1ms');
    expect(scaleDuration('0s', 10)).toBe('0s');
  });
  it('a factor is a finite number of at least 1; the error names --factor and what was given', () => {
    expect(checkFactor(1)).toBe(1);
    expect(checkFactor(2.5)).toBe(2.5);
    expect(() => checkFactor(0)).toThrow(/^--factor must be a number of at least 1 .* not 0$/);
    expect(() => checkFactor(0.5)).toThrow('--factor');
    expect(() => checkFactor(Number.NaN, 'abc')).toThrow(/not "abc"$/);
    expect(() => checkFactor(Number.POSITIVE_INFINITY)).toThrow('--factor');
    expect(() => checkFactor('10')).toThrow('--factor');
  });
});

describe('scaleExpr', () => {
  it("MxlFabricExporterDown's windows (alerts.yml): [1m] -> [6s] at factor 10, nothing else changed", () => {
    const expr = 'up{job="mxl-fabric-exporter"} == 0\n  and\n(\n  count_over_time(up{job="mxl-fabric-exporter"}[1m])\n    -\n  sum_over_time(up{job="mxl-fabric-exporter"}[1m])\n) >= 2\n';
    expect(scaleExpr(expr, 10)).toBe(expr.replaceAll('[1m]', '[6s]'));
    expect(scaleExpr('count_over_time(up{job="mxl-fabric-exporter"}[1m])', 10)).toBe('count_over_time(up{job="mxl-fabric-exporter"}[6s])');
  });
  it("MxlFabricSiteSilent's [1h] and [2m]; regex matchers and label values are left alone", () => {
    expect(scaleExpr('count by (site) (max_over_time(up{job="mxl-fabric-exporter"}[1h]))\n  unless on (site)\ncount by (site) (count_over_time(up{job="mxl-fabric-exporter"}[2m]))', 10))
      .toBe('count by (site) (max_over_time(up{job="mxl-fabric-exporter"}[360s]))\n  unless on (site)\ncount by (site) (count_over_time(up{job="mxl-fabric-exporter"}[12s]))');
    const retries = 'increase(mxl_fabric_port_transport_errors_total{kind=~"retries_exceeded|rnr_retries_exceeded"}[10m])';
    expect(scaleExpr(retries, 10)).toBe('increase(mxl_fabric_port_transport_errors_total{kind=~"retries_exceeded|rnr_retries_exceeded"}[60s])');
  });
  it('a subquery: range and step both scaled; an empty step stays empty', () => {
    const inner = 'sum by (job, instance, device, port) (rate(mxl_fabric_port_ecn_marked_packets_total[5m]))';
    expect(scaleExpr(`max_over_time(${inner}[10m:1m])`, 10)).toBe('max_over_time(sum by (job, instance, device, port) (rate(mxl_fabric_port_ecn_marked_packets_total[30s]))[60s:6s])');
    expect(scaleExpr(`max_over_time(${inner}[1h:])`, 10)).toBe('max_over_time(sum by (job, instance, device, port) (rate(mxl_fabric_port_ecn_marked_packets_total[30s]))[360s:])');
    expect(scaleExpr('max_over_time(rate(x[1m30s])[1h30m:500ms])', 10)).toBe('max_over_time(rate(x[9s])[540s:50ms])');
  });
  it('offset, negative offset, and an offset after a range window', () => {
    expect(scaleExpr('rate(mxl_fabric_port_discards_total[5m] offset 1h)', 10)).toBe('rate(mxl_fabric_port_discards_total[30s] offset 360s)');
    expect(scaleExpr('mxl_fabric_drift_tolerance_ratio offset 5m', 10)).toBe('mxl_fabric_drift_tolerance_ratio offset 30s');
    expect(scaleExpr('mxl_fabric_drift_tolerance_ratio offset -2m', 10)).toBe('mxl_fabric_drift_tolerance_ratio offset -12s');
    expect(scaleExpr('up offset  1m', 10)).toBe('up offset 6s');
  });
  it("MxlFabricConnectionDown's last_over_time(mxl_fabric_connection_info[10m]) is kept: the exporter keeps a vanished connection 10 minutes, unscaled", () => {
    const e = 'max by (pid, flow_id) (last_over_time(mxl_fabric_connection_info{flow_id!=""}[10m])) unless rate(x[5m])';
    expect(scaleExpr(e, 10)).toBe('max by (pid, flow_id) (last_over_time(mxl_fabric_connection_info{flow_id!=""}[10m])) unless rate(x[30s])');
    expect(scaleExpr('last_over_time(up[10m])', 10)).toBe('last_over_time(up[60s])');
  });
  it("the one-minute graces over ALERTS (the port grace, the flows' causes) are kept: they cover MXL's reconnect, a real duration; a longer window over ALERTS is scaled", () => {
    const grace = 'max by (job, instance, device, port) (max_over_time(ALERTS{alertname=~"MxlFabricPort(Down|Absent|MtuBelowModel)"}[1m]))';
    expect(scaleExpr(`(x unless on (device) ${grace}) and rate(y[5m])`, 10)).toBe(`(x unless on (device) ${grace}) and rate(y[30s])`);
    expect(scaleExpr('max_over_time(ALERTS{alertname="MxlFabricFlowStalled"}[1m])', 10)).toBe('max_over_time(ALERTS{alertname="MxlFabricFlowStalled"}[1m])');
    expect(scaleExpr('increase(x[10m]) unless max_over_time(ALERTS{alertname="MxlFabricPortDown"}[10m])', 10))
      .toBe('increase(x[60s]) unless max_over_time(ALERTS{alertname="MxlFabricPortDown"}[60s])');
  });
  it('an expression without durations is unchanged; a bad duration in a window is an error naming it', () => {
    const e = 'max without (source) (mxl_fabric_port_measured_bytes_per_second)';
    expect(scaleExpr(e, 10)).toBe(e);
    expect(() => scaleExpr('rate(x[5x])', 10)).toThrow('not a duration: "5x"');
  });
});

describe('scaleRules', () => {
  it('for, keep_firing_for, group interval and expressions scaled; everything else kept; interval option overrides', () => {
    const doc = {
      groups: [{
        name: 'g', interval: '1m', limit: 10,
        rules: [
          { alert: 'A', expr: 'rate(x[5m]) > 0', for: '5m', keep_firing_for: '10m', labels: { severity: 'critical' }, annotations: { summary: 'for 5m [5m]' } },
          { record: 'r:x:rate5m', expr: 'rate(x[5m])' },
          { alert: 'B', expr: 'x == 0' },
        ],
      }],
    };
    const out = scaleRules(doc, 10) as RuleFile;
    expect(out).toEqual({
      groups: [{
        name: 'g', interval: '6s', limit: 10,
        rules: [
          { alert: 'A', expr: 'rate(x[30s]) > 0', for: '30s', keep_firing_for: '60s', labels: { severity: 'critical' }, annotations: { summary: 'for 5m [5m]' } },
          { record: 'r:x:rate5m', expr: 'rate(x[30s])' },
          { alert: 'B', expr: 'x == 0' },
        ],
      }],
    });
    expect((scaleRules(doc, 10, { interval: '1s' }) as RuleFile).groups[0]!.interval).toBe('1s');
    expect(doc.groups[0]!.rules[0]!.for).toBe('5m');
  });
  it('rejects a bad factor and a document without groups', () => {
    expect(() => scaleRules({ groups: [] }, 0)).toThrow('--factor');
    expect(() => scaleRules({}, 10)).toThrow('groups');
    expect(() => scaleRules(null, 10)).toThrow('groups');
  });
});

describe('scaleAlertmanager', () => {
  it('timers of every route scaled, nested ones too; defaults written out scaled when left out; receivers to the webhook', () => {
    const doc = {
      route: {
        receiver: 'ticket', group_by: ['site'],
        routes: [{ matchers: ['severity="critical"'], receiver: 'page', group_wait: '10s', routes: [{ matchers: ['x="y"'], repeat_interval: '1h', group_interval: '2m' }] }],
      },
      inhibit_rules: [{ source_matchers: ['a="b"'], target_matchers: ['c="d"'], equal: ['site'] }],
      receivers: [{ name: 'ticket', email_configs: [{ to: 'x@example.net' }] }, { name: 'page' }],
    };
    expect(scaleAlertmanager(doc, 10, { webhook: 'http://127.0.0.1:9999' })).toEqual({
      global: { resolve_timeout: '30s' },
      route: {
        receiver: 'ticket', group_by: ['site'], group_wait: '3s', group_interval: '30s', repeat_interval: '1440s',
        routes: [{ matchers: ['severity="critical"'], receiver: 'page', group_wait: '1s', routes: [{ matchers: ['x="y"'], repeat_interval: '360s', group_interval: '12s' }] }],
      },
      inhibit_rules: doc.inhibit_rules,
      receivers: [
        { name: 'ticket', webhook_configs: [{ url: 'http://127.0.0.1:9999/ticket', send_resolved: true }] },
        { name: 'page', webhook_configs: [{ url: 'http://127.0.0.1:9999/page', send_resolved: true }] },
      ],
    });
  });
  it('global settings kept, resolve_timeout scaled; without a webhook the receivers are kept', () => {
    const doc = { global: { resolve_timeout: '10m', smtp_from: 'am@example.net' }, route: { receiver: 'r' }, receivers: [{ name: 'r' }] };
    const out = scaleAlertmanager(doc, 4) as AmConfig;
    expect(out.global).toEqual({ resolve_timeout: '150s', smtp_from: 'am@example.net' });
    expect(out.receivers).toEqual([{ name: 'r' }]);
  });
  it('rejects a bad factor and a config without route or receivers', () => {
    expect(() => scaleAlertmanager({ route: {}, receivers: [] }, 0.9)).toThrow('--factor');
    expect(() => scaleAlertmanager({ receivers: [] }, 10)).toThrow('route');
    expect(() => scaleAlertmanager({ route: {} }, 10)).toThrow('receivers');
  });
});

describe('the shipped rules and Alertmanager config, scaled (writeScaled)', () => {
  const FACTOR = 10;
  const dir = tmp();
  const written = writeScaled(dir, FACTOR, { webhook: 'http://127.0.0.1:9999/hook' }) as { rules: string[]; alertmanager: string };

  it('writes one scaled copy per shipped file into the directory', () => {
    expect(written.rules).toEqual(SHIPPED_RULES.map((f: string) => join(dir, `scaled-${basename(f)}`)));
    expect(written.alertmanager).toBe(join(dir, 'scaled-alertmanager.yml'));
    expect(SHIPPED_RULES.map((f: string) => basename(f))).toEqual(['alerts.yml', 'recording.yml']);
    for (const f of [...written.rules, written.alertmanager]) expect(readFileSync(f, 'utf8')).toMatch(/^# .* with durations divided by 10 \(test\/rxe\/faults\/scale\.mjs\)\n/);
  });

  it('rule by rule: every for: is the shipped one / factor, expressions scaled, names, labels and annotations unchanged', () => {
    let fors = 0;
    let windows = 0;
    SHIPPED_RULES.forEach((file: string, i: number) => {
      const shipped = load<RuleFile>(file);
      const out = load<RuleFile>(written.rules[i]!);
      expect(out.groups.map((g) => g.name)).toEqual(shipped.groups.map((g) => g.name));
      shipped.groups.forEach((g, gi) => {
        const og = out.groups[gi]!;
        expect(og.rules).toHaveLength(g.rules.length);
        g.rules.forEach((r, ri) => {
          const o = og.rules[ri]!;
          const name = `${basename(file)} ${r.alert ?? r.record}`;
          expect(o.alert, name).toBe(r.alert);
          expect(o.record, name).toBe(r.record);
          expect(o.labels, name).toEqual(r.labels);
          expect(o.annotations, name).toEqual(r.annotations);
          if (r.for === undefined) expect(o.for, name).toBeUndefined();
          else {
            expect(durationMs(o.for), name).toBe(durationMs(r.for) / FACTOR);
            fors++;
          }
          expect(o.keep_firing_for, name).toBe(r.keep_firing_for);
          // the same expression with each [range] divided by the factor, but the kept windows
          // (the connection memory and the port grace: real durations, unscaled)
          const unkept = (e: string) => KEPT_WINDOWS.reduce((x, re) => x.replace(re, ''), e);
          const ranges = (e: string) => [...unkept(e).matchAll(/\[([0-9a-z]+)\]/g)].map((m) => durationMs(m[1]));
          expect(ranges(o.expr), name).toEqual(ranges(r.expr).map((ms: number) => ms / FACTOR));
          windows += ranges(r.expr).length;
          expect(o.expr.replace(/\[[0-9a-z:]+\]/g, '[]'), name).toBe(r.expr.replace(/\[[0-9a-z:]+\]/g, '[]'));
          expect(o.expr, name).toBe(scaleExpr(r.expr, FACTOR));
        });
      });
    });
    // the shipped alerts all have a for: and some windows; a rule file parsed as nothing would pass the loop
    expect(fors).toBeGreaterThanOrEqual(20);
    expect(windows).toBeGreaterThanOrEqual(10);
    const exporterDown = load<RuleFile>(written.rules[0]!).groups.flatMap((g) => g.rules).find((r) => r.alert === 'MxlFabricExporterDown')!;
    expect(exporterDown.for).toBe('30s');
    expect(exporterDown.expr).toContain('count_over_time(up{job="mxl-fabric-exporter"}[6s])');
  });

  needs(promtool).it('promtool check rules accepts the scaled rule files', () => {
    const r = spawnSync(promtool.require(), ['check', 'rules', ...written.rules], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/scaled-alerts\.yml[\s\S]*SUCCESS/);
    expect(r.stdout).toMatch(/scaled-recording\.yml[\s\S]*SUCCESS/);
  });

  it('Alertmanager: inhibit_rules and routing identical, timers of every route / factor, every receiver to <webhook>/<name>', () => {
    const shipped = load<AmConfig>(SHIPPED_ALERTMANAGER);
    const out = load<AmConfig>(written.alertmanager);
    expect(out.inhibit_rules).toEqual(shipped.inhibit_rules);
    expect(shipped.inhibit_rules!.length).toBeGreaterThan(0);
    const TIMERS = ['group_wait', 'group_interval', 'repeat_interval'] as const;
    const compare = (o: Route, s: Route, path: string) => {
      for (const k of TIMERS) {
        if (s[k] === undefined) expect(o[k], `${path}.${k}`).toBeUndefined();
        else expect(durationMs(o[k]), `${path}.${k}`).toBe(durationMs(s[k]) / FACTOR);
      }
      const strip = (r: Route) => Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'routes' && !(TIMERS as readonly string[]).includes(k)));
      expect(strip(o), path).toEqual(strip(s));
      expect(o.routes?.length, path).toBe(s.routes?.length);
      (s.routes ?? []).forEach((c, i) => compare(o.routes![i]!, c, `${path}.routes[${i}]`));
    };
    compare(out.route, shipped.route, 'route');
    expect(out.route).toMatchObject({ group_wait: '3s', group_interval: '30s', repeat_interval: '1440s' });
    expect(durationMs(out.global!.resolve_timeout)).toBe(durationMs(shipped.global!.resolve_timeout) / FACTOR);
    expect(out.receivers.map((r) => r.name)).toEqual(shipped.receivers.map((r) => r.name));
    for (const r of out.receivers) expect(r).toEqual({ name: r.name, webhook_configs: [{ url: `http://127.0.0.1:9999/hook/${r.name}`, send_resolved: true }] });
  });

  needs(amtool).it('amtool check-config accepts the scaled Alertmanager config', () => {
    const r = spawnSync(amtool.require(), ['check-config', written.alertmanager], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS/);
    const shipped = load<AmConfig>(SHIPPED_ALERTMANAGER);
    expect(r.stdout).toContain(`${shipped.inhibit_rules!.length} inhibit rules`);
  });

  it('a missing input file is an error naming it', () => {
    const missing = join(dir, 'nope.yml');
    expect(() => writeScaled(join(dir, 'm'), FACTOR, { rules: [missing] })).toThrow(`${missing}: missing`);
  });

  it("pageDelayMs: the longest scaled for: of the alerts asked for and the longest scaled group_wait (host.mjs's hold of a fault that must not page)", () => {
    // ModelDrift for: 5m, ExporterAbsent 15m, PortDown 1m (alerts.yml); group_wait 30s (alertmanager.yml)
    expect(pageDelayMs(written, ['MxlFabricModelDrift', 'MxlFabricFlowDrift', 'MxlFabricTransportRetries'])).toBe(30_000 + 3_000);
    expect(pageDelayMs(written, ['MxlFabricPortDown', 'MxlFabricExporterAbsent'])).toBe(90_000 + 3_000);
    expect(pageDelayMs(written, ['MxlFabricPortDown'])).toBe(6_000 + 3_000);
    expect(() => pageDelayMs(written, ['MxlFabricModelDrift', 'MxlFabricNoSuch'])).toThrow(`no alert MxlFabricNoSuch in ${written.rules.join(', ')}`);
    expect(() => pageDelayMs(written, [])).toThrow('no alert (none asked for)');
  });
});

describe('the CLI', () => {
  const run = (...args: string[]) => spawnSync(process.execPath, [SCALE, ...args], { encoding: 'utf8', cwd: ROOT });

  it('--factor 10 --out DIR --webhook URL writes the scaled copies and prints their paths', () => {
    const out = join(tmp(), 'out');
    const r = run('--factor', '10', '--out', out, '--webhook', 'http://127.0.0.1:9999');
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ rules: [join(out, 'scaled-alerts.yml'), join(out, 'scaled-recording.yml')], alertmanager: join(out, 'scaled-alertmanager.yml') });
    expect(load<AmConfig>(join(out, 'scaled-alertmanager.yml')).receivers[0]).toEqual({ name: 'mxl-fabric-page', webhook_configs: [{ url: 'http://127.0.0.1:9999/mxl-fabric-page', send_resolved: true }] });
  });
  it('--factor 0 exits 2 naming --factor, and writes nothing', () => {
    const out = join(tmp(), 'out');
    const r = run('--factor', '0', '--out', out);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^scale\.mjs: --factor must be a number of at least 1 .*not "0"\n$/);
    expect(existsSync(out)).toBe(false);
  });
  it('a factor that is no number, or none, exits 2 naming --factor', () => {
    const out = join(tmp(), 'out');
    const abc = run('--factor', 'abc', '--out', out);
    expect(abc.status).toBe(2);
    expect(abc.stderr).toMatch(/--factor .*not "abc"/);
    const none = run('--out', out);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/--factor N is required/);
  });
  it('a missing --out exits 2 naming --out', () => {
    const r = run('--factor', '10');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^scale\.mjs: --out DIR is required\n$/);
  });
  it('works from a checkout whose path has a space (its paths are files, not URLs)', () => {
    const root = join(tmp(), 'a checkout');
    mkdirSync(join(root, 'test', 'rxe', 'faults'), { recursive: true });
    cpSync(SCALE, join(root, 'test', 'rxe', 'faults', 'scale.mjs'));
    for (const d of ['prometheus/rules', 'alertmanager']) cpSync(join(ROOT, 'deploy', d), join(root, 'deploy', d), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
    const out = join(root, 'out');
    const r = spawnSync(process.execPath, [join(root, 'test', 'rxe', 'faults', 'scale.mjs'), '--factor', '10', '--out', out], { encoding: 'utf8', cwd: root });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).alertmanager).toBe(join(out, 'scaled-alertmanager.yml'));
    expect(readFileSync(join(out, 'scaled-alerts.yml'), 'utf8')).toContain(`# ${join(root, 'deploy', 'prometheus', 'rules', 'alerts.yml')} with durations divided by 10`);
  });
  it('an unknown option exits 2 naming it', () => {
    const r = run('--factor', '10', '--out', join(tmp(), 'o'), '--fast');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--fast/);
  });
});
