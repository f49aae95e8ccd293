/**
 * Summarizes a V8 .cpuprofile (node --cpu-prof): self time by file and by function, and
 * inclusive time by function, as percentages of the non-idle samples.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export function summarizeProfile(file, root) {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const where = (cf) => {
    if (!cf.url) return '';
    let u = cf.url;
    if (u.startsWith('file://')) u = path.relative(root, fileURLToPath(u));
    return u;
  };
  const fnKey = (cf) => `${cf.functionName || '(anonymous)'} ${where(cf)}${cf.url ? `:${cf.lineNumber + 1}` : ''}`.trim();

  const self = new Map();
  const selfFile = new Map();
  const incl = new Map();
  let total = 0;
  let idle = 0;
  prof.samples.forEach((id, i) => {
    const dt = prof.timeDeltas[i + 1] ?? prof.timeDeltas[i] ?? 0;
    const node = byId.get(id);
    const cf = node.callFrame;
    if (cf.functionName === '(idle)') {
      idle += dt;
      return;
    }
    total += dt;
    const k = fnKey(cf);
    self.set(k, (self.get(k) ?? 0) + dt);
    const fk = where(cf) || cf.functionName;
    selfFile.set(fk, (selfFile.get(fk) ?? 0) + dt);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const ck = fnKey(byId.get(cur).callFrame);
      if (seen.has(ck)) continue;
      seen.add(ck);
      incl.set(ck, (incl.get(ck) ?? 0) + dt);
    }
  });
  const top = (m, n, key) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => ({ [key]: k, ms: Math.round(v / 100) / 10, percent: Math.round((1000 * v) / total) / 10 }));
  return {
    busyMs: Math.round(total / 1000),
    idleMs: Math.round(idle / 1000),
    byFile: top(selfFile, 15, 'file'),
    topFunctions: top(self, 25, 'function'),
    inclusive: top(new Map([...incl].filter(([k]) => !k.startsWith('(root)'))), 40, 'function'),
  };
}
