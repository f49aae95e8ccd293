/**
 * Builds MXL domains in the exact on-disk format (mxl-facts.md; dmf-mxl/mxl
 * lib/include/mxl/flowinfo.h, FlowManager): `<uuid>.mxl-flow/` with flow_def.json,
 * a 2048-byte `data` header (mxlFlowInfo v1), `access`, and `grains/data.<N>`, built in a
 * `.mxl-tmp-*` folder and renamed into place as MXL does.
 *
 * Plain JavaScript (types in mxl-domain.d.mts) so that the soft-RoCE guest's writer
 * (test/rxe/flows/domain-writer.mjs) runs it with node alone.
 */
import { mkdirSync, mkdtempSync, renameSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** @param {import('./mxl-domain.d.mts').HeaderFields} h */
export function flowHeader(h) {
  const b = Buffer.alloc(2048);
  b.writeUInt32LE(1, 0);
  b.writeUInt32LE(2048, 4);
  Buffer.from(h.id.replace(/-/g, ''), 'hex').copy(b, 8);
  b.writeUInt32LE(h.format, 24);
  b.writeBigInt64LE(h.rate[0], 32);
  b.writeBigInt64LE(h.rate[1], 40);
  if (h.format === 2) {
    b.writeUInt32LE(h.channelCount ?? 1, 136);
    b.writeUInt32LE(4800, 140);
  } else {
    b.writeUInt32LE(h.grainCount ?? 4, 152);
  }
  b.writeBigUInt64LE(h.headIndex ?? 0n, 200);
  b.writeBigUInt64LE(h.lastWriteTime ?? 0n, 208);
  return b;
}

export const makeDomain = () => mkdtempSync(join(tmpdir(), 'mxl-domain-'));

/** Writes a flow the way MXL does: build under .mxl-tmp-*, then rename into place. */
export function addFlow(domain, flowDef, header) {
  const tmp = mkdtempSync(join(domain, '.mxl-tmp-')); // unique, as MXL's: writers may create flows at once
  mkdirSync(join(tmp, 'grains'));
  writeFileSync(join(tmp, 'flow_def.json'), typeof flowDef === 'string' ? flowDef : JSON.stringify(flowDef, null, 2));
  writeFileSync(join(tmp, 'data'), flowHeader(header));
  writeFileSync(join(tmp, 'access'), '');
  for (let i = 0; i < (header.grainCount ?? 0); i++) writeFileSync(join(tmp, 'grains', `data.${i}`), Buffer.alloc(64));
  const dir = join(domain, `${header.id}.mxl-flow`);
  renameSync(tmp, dir);
  return dir;
}

/** Rewrites the runtime block in place, as a writer's commit does. */
export function commit(dir, headIndex, lastWriteTime) {
  const b = Buffer.alloc(16);
  b.writeBigUInt64LE(headIndex, 0);
  b.writeBigUInt64LE(lastWriteTime, 8);
  const fd = openSync(join(dir, 'data'), 'r+');
  writeSync(fd, b, 0, 16, 200);
  closeSync(fd);
}
