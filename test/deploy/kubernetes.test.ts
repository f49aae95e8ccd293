/**
 * deploy/kubernetes: every manifest validated against the Kubernetes API schemas (kubernetes-models,
 * generated from the Kubernetes OpenAPI spec; @kubernetes-models/prometheus-operator for the
 * ServiceMonitor and PrometheusRule CRDs), unknown fields caught by TypeScript's excess property
 * check against the same packages' types, the wiring between the objects, the PrometheusRule
 * generated from deploy/prometheus/rules, and the ConfigMap's config accepted by `check`.
 */
import { describe, it, expect } from 'vitest';
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { parseAllDocuments, parse } from 'yaml';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { needs, ROOT, tool } from './tools.js';
import { addFlow, makeDomain } from '../domain/mxl-domain.mjs';
// @ts-expect-error: plain JavaScript module without types
import { build, OUTPUT } from '../../deploy/kubernetes/build-prometheusrule.mjs';

const K8S = join(ROOT, 'deploy', 'kubernetes');
const promtool = tool('promtool', 'prometheus');

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
interface Manifest { file: string; doc: Obj }

const MANIFESTS: Manifest[] = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && !f.endsWith('-patch.yaml')).sort().flatMap((file) =>
  parseAllDocuments(readFileSync(join(K8S, file), 'utf8')).map((d) => {
    if (d.errors.length) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    return { file, doc: d.toJS() as Obj };
  }).filter((m) => m.doc));

/** kind -> the model class (validation) and the module/interface of its TypeScript type. */
const MODELS: Record<string, { apiVersion: string; model: new (d: Obj) => { validate(): void }; types: [string, string] }> = {
  Namespace: { apiVersion: 'v1', model: Namespace as never, types: ['kubernetes-models/v1/Namespace', 'INamespace'] },
  ConfigMap: { apiVersion: 'v1', model: ConfigMap as never, types: ['kubernetes-models/v1/ConfigMap', 'IConfigMap'] },
  Service: { apiVersion: 'v1', model: Service as never, types: ['kubernetes-models/v1/Service', 'IService'] },
  DaemonSet: { apiVersion: 'apps/v1', model: DaemonSet as never, types: ['kubernetes-models/apps/v1/DaemonSet', 'IDaemonSet'] },
  ServiceMonitor: { apiVersion: 'monitoring.coreos.com/v1', model: ServiceMonitor as never, types: ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor', 'IServiceMonitor'] },
  PrometheusRule: { apiVersion: 'monitoring.coreos.com/v1', model: PrometheusRule as never, types: ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule', 'IPrometheusRule'] },
};

const one = (kind: string): Obj => {
  const found = MANIFESTS.filter((m) => m.doc.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!.doc;
};

describe('deploy/kubernetes manifests', { timeout: 60_000 }, () => {
  it('has the expected objects, each of a known kind and apiVersion', () => {
    expect(MANIFESTS.map((m) => m.doc.kind).sort()).toEqual(['ConfigMap', 'DaemonSet', 'Namespace', 'PrometheusRule', 'Service', 'ServiceMonitor']);
    for (const { file, doc } of MANIFESTS) {
      expect(MODELS[doc.kind], `${file}: kind ${doc.kind}`).toBeDefined();
      expect(doc.apiVersion, file).toBe(MODELS[doc.kind]!.apiVersion);
    }
  });

  it('every manifest validates against the Kubernetes / prometheus-operator OpenAPI schemas', () => {
    const errors: string[] = [];
    for (const { file, doc } of MANIFESTS) {
      try {
        new (MODELS[doc.kind]!.model)(doc).validate();
      } catch (e) {
        errors.push(`${file} (${doc.kind}): ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    expect(errors, errors.join('\n')).toEqual([]);
  });

  it('the schema validation does catch a wrong manifest (control)', () => {
    const ds = structuredClone(one('DaemonSet'));
    ds.spec.template.spec.containers[0].ports[0].containerPort = 'metrics';
    expect(() => new DaemonSet(ds).validate()).toThrow(/containerPort/);
  });

  it('no manifest has a field the API does not know (TypeScript excess property check on the same models)', () => {
    const { diagnostics } = typeCheck(MANIFESTS);
    expect(diagnostics, diagnostics.join('\n')).toEqual([]);
    const bad = structuredClone(one('DaemonSet'));
    bad.spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem = true; // typo of readOnlyRootFilesystem
    const control = typeCheck([{ file: 'control.yaml', doc: bad }]).diagnostics;
    expect(control.join('\n')).toMatch(/readOnlyRootFileSystem/);
  });

  it('the DaemonSet sees the host\'s pids (connections name their processes), and ptrace-patch.yaml adds CAP_SYS_PTRACE alone', () => {
    expect(one('DaemonSet').spec.template.spec.hostPID).toBe(true);
    const patch = parse(readFileSync(join(K8S, 'ptrace-patch.yaml'), 'utf8')) as Obj;
    expect(patch.metadata).toEqual({ name: one('DaemonSet').metadata.name, namespace: one('DaemonSet').metadata.namespace });
    expect(patch.spec.template.spec.securityContext).toEqual({ runAsNonRoot: false, runAsUser: 0 });
    expect(patch.spec.template.spec.containers).toEqual([{ name: 'exporter', securityContext: { capabilities: { drop: ['ALL'], add: ['SYS_PTRACE'] } } }]);
  });

  it('the DaemonSet runs unprivileged on the host network with /sys read-only and /dev/infiniband', () => {
    const ds = one('DaemonSet');
    const pod = ds.spec.template.spec;
    expect(pod.hostNetwork).toBe(true);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    const [c] = pod.containers;
    expect(pod.containers).toHaveLength(1);
    expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(c.securityContext.capabilities.add).toBeUndefined();
    expect(c.args).toEqual(expect.arrayContaining(['serve', '--path.sysfs=/host/sys', '--config.file=/etc/mxl-fabric-exporter/config.yaml']));
    const mount = (name: string) => c.volumeMounts.find((m: Obj) => m.name === name);
    const volume = (name: string) => pod.volumes.find((v: Obj) => v.name === name);
    expect(mount('sys')).toMatchObject({ mountPath: '/host/sys', readOnly: true });
    expect(volume('sys').hostPath.path).toBe('/sys');
    expect(volume('infiniband').hostPath.path).toBe('/dev/infiniband');
    expect(mount('infiniband').mountPath).toBe('/dev/infiniband');
    expect(volume('config').configMap.name).toBe(one('ConfigMap').metadata.name);
    // The MXL domain: the node's /dev/shm read-only at the same path, so /dev/shm/mxl is the same inside.
    expect(volume('shm').hostPath).toEqual({ path: '/dev/shm', type: 'Directory' });
    expect(mount('shm')).toMatchObject({ mountPath: '/dev/shm', readOnly: true });
    // The packaged default (config/default.yaml, as the image ships it): bind: auto on /dev/shm/mxl, nothing else.
    const config = parse(one('ConfigMap').data['config.yaml'] as string) as { domains: { path: string }[]; flows?: unknown[] };
    expect(config).toEqual(parse(readFileSync(join(ROOT, 'config', 'default.yaml'), 'utf8')));
    expect(config).toEqual({ domains: [{ path: '/dev/shm/mxl', bind: 'auto' }] });
    // Only labelled RDMA media nodes.
    expect(pod.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux', 'mxl-fabric/rdma': 'true' });
    expect(c.livenessProbe.httpGet.path).toBe('/-/healthy');
    expect(c.readinessProbe.httpGet.path).toBe('/-/ready');
    const portName = c.ports[0].name;
    expect(c.livenessProbe.httpGet.port).toBe(portName);
    expect(c.args).toContain(`--web.listen-address=:${c.ports[0].containerPort}`);
    // selector <-> template labels
    for (const [k, v] of Object.entries(ds.spec.selector.matchLabels)) expect(ds.spec.template.metadata.labels[k]).toBe(v);
  });

  it('Service, ServiceMonitor and PrometheusRule are wired to the DaemonSet and to the rules\' job name', () => {
    const ds = one('DaemonSet');
    const svc = one('Service');
    const sm = one('ServiceMonitor');
    const podLabels = ds.spec.template.metadata.labels;
    for (const [k, v] of Object.entries(svc.spec.selector)) expect(podLabels[k], `Service selector ${k}`).toBe(v);
    expect(svc.spec.ports[0].targetPort).toBe(ds.spec.template.spec.containers[0].ports[0].name);
    for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) expect(svc.metadata.labels[k], `ServiceMonitor selector ${k}`).toBe(v);
    expect(sm.spec.namespaceSelector.matchNames).toContain(svc.metadata.namespace);
    expect(sm.spec.endpoints.map((e: Obj) => e.port)).toContain(svc.spec.ports[0].name);
    // The operator names the job after the Service; the alert rules select job="mxl-fabric-exporter".
    expect(sm.spec.jobLabel).toBeUndefined();
    expect(svc.metadata.name).toBe('mxl-fabric-exporter');
    expect(readFileSync(join(ROOT, 'deploy', 'prometheus', 'rules', 'alerts.yml'), 'utf8')).toContain(`job="${svc.metadata.name}"`);
    const namespaces = new Set(MANIFESTS.filter((m) => m.doc.kind !== 'Namespace').map((m) => m.doc.metadata.namespace));
    expect([...namespaces]).toEqual([one('Namespace').metadata.name]);
  });

  it('kustomization.yaml lists every manifest', () => {
    const k = parse(readFileSync(join(K8S, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    expect([...k.resources].sort()).toEqual([...new Set(MANIFESTS.map((m) => m.file))].sort());
  });

  it('prometheusrule.yaml is what build-prometheusrule.mjs generates from deploy/prometheus/rules', () => {
    expect(readFileSync(OUTPUT, 'utf8'), 'run: node deploy/kubernetes/build-prometheusrule.mjs').toBe(build());
    const rule = one('PrometheusRule');
    const fromFiles = ['alerts.yml', 'recording.yml'].flatMap((f) =>
      (parse(readFileSync(join(ROOT, 'deploy', 'prometheus', 'rules', f), 'utf8')) as { groups: unknown[] }).groups);
    expect(rule.spec.groups).toEqual(fromFiles);
    const r = spawnSync(process.execPath, [join(K8S, 'build-prometheusrule.mjs'), '--check'], { encoding: 'utf8', cwd: ROOT });
    expect(r.status, r.stderr).toBe(0);
  });

  needs(promtool).it('the PrometheusRule groups pass promtool check rules', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mfe-promrule-'));
    try {
      const f = join(dir, 'groups.yml');
      writeFileSync(f, JSON.stringify({ groups: one('PrometheusRule').spec.groups }));
      const r = spawnSync(promtool.require(), ['check', 'rules', f], { encoding: 'utf8' });
      expect(r.status, r.stdout + r.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** `check` on the mlx5_roce fixture with the config's /dev/shm/mxl replaced by a node's domain holding one 1080p25 flow. */
  function checkWithNodeDomain(configText: string): SpawnSyncReturns<string> {
    const main = join(ROOT, 'dist', 'cli', 'main.js');
    if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first`);
    const dir = mkdtempSync(join(tmpdir(), 'mfe-cm-'));
    try {
      const domain = makeDomain();
      addFlow(domain, {
        id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d71', label: 'Node camera', format: 'urn:x-nmos:format:video',
        tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Node camera:Video'] }, media_type: 'video/v210', grain_rate: { numerator: 25 },
        frame_width: 1920, frame_height: 1080, interlace_mode: 'progressive',
      }, { id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d71', format: 1, rate: [25n, 1n] });
      writeFileSync(join(dir, 'config.yaml'), configText.replaceAll('/dev/shm/mxl', domain));
      return spawnSync(process.execPath, [main, 'check', '--config.file', join(dir, 'config.yaml'), '--path.sysfs', join(ROOT, 'test', 'fixtures', 'sysfs', 'mlx5_roce')], { encoding: 'utf8' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('the ConfigMap\'s config.yaml (bind: auto) passes `mxl-fabric-exporter check` on the mlx5_roce fixture', () => {
    const r = checkWithNodeDomain(one('ConfigMap').data['config.yaml'] as string);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    // Without connections (none in a fixture) a bind: auto flow is bound nowhere yet: no port, no flow to provision.
    expect(r.stdout).toMatch(/valid, 0 flows \(0 configured, 0 found in MXL domains; 1 more found, not bound yet: no connection carries it \(bind: auto\)\) on 0 ports/);
    expect(r.stdout).toMatch(/provisioning: ok/);
  });

  it('its commented explicit binding, uncommented, passes `check` with the flow bound on mlx5_0', () => {
    const text = one('ConfigMap').data['config.yaml'] as string;
    const example = text.slice(text.indexOf('# ports:')).split('\n').map((l) => l.replace(/^# ?/, '')).join('\n');
    const r = checkWithNodeDomain(example);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/valid, 1 flow \(0 configured, 1 found in MXL domains\) on 1 port/);
    expect(r.stdout).toMatch(/OK +domain +.*: 1 flow found, 1 selected and included/);
    expect(r.stdout).toMatch(/provisioning: ok/);
  });
});

/** Type-checks each manifest as an object literal of its kubernetes-models interface. */
function typeCheck(manifests: Manifest[]): { diagnostics: string[] } {
  const file = join(ROOT, 'test', 'deploy', '__manifest_types__.ts');
  const lines: string[] = [];
  manifests.forEach(({ doc }, i) => {
    const [mod, iface] = MODELS[doc.kind]!.types;
    lines.push(`export const m${i}: import(${JSON.stringify(mod)}).${iface} = ${JSON.stringify(doc, null, 2)};`);
  });
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true, noEmit: true, skipLibCheck: true, types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, source, lang) : getSourceFile(name, lang, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (name === file ? source : readFile(name));
  const program = ts.createProgram([file], options, host);
  const sf = program.getSourceFile(file)!;
  const diags = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
  return {
    diagnostics: diags.map((d) => {
      const where = d.start !== undefined ? sf.getLineAndCharacterOfPosition(d.start) : undefined;
      const manifest = where ? manifests[Number(/^export const m(\d+)/.exec(source.split('\n').slice(0, where.line + 1).reverse().find((l) => l.startsWith('export const m')) ?? '')?.[1])] : undefined;
      return `${manifest?.file ?? '?'} (${manifest?.doc.kind ?? '?'}): ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    }),
  };
}
