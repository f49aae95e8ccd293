/**
 * flatString() hands back one flat string. V8's own view of a string's representation is only
 * visible with --allow-natives-syntax, so the check runs the built module in a child node.
 */
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { flatString } from '../../src/flat-string.js';

const root = path.join(__dirname, '..', '..');

/** V8's string type of a label text built the way formatLabels() builds it, before and after flatString(). */
function stringTypes(): { built: string; flat: string } {
  const script = `
    const { flatString } = await import(${JSON.stringify(path.join(root, 'dist', 'flat-string.js'))});
    let s = '';
    for (const k of ['device', 'port', 'source', 'counter']) s += \`\${s ? ',' : '{'}\${k}="\${k.repeat(3)}"\`;
    %DebugPrint(s);
    %DebugPrint(flatString(s));`;
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  expect(r.status, r.stderr).toBe(0);
  const types = [...r.stdout.matchAll(/^ - type: (\w+)$/gm)].map((m) => m[1]!);
  expect(types).toHaveLength(2);
  return { built: types[0]!, flat: types[1]! };
}

describe('flatString', () => {
  it('turns a string built piece by piece (a tree of cons strings) into one sequential string', () => {
    expect(stringTypes()).toEqual({ built: 'CONS_ONE_BYTE_STRING_TYPE', flat: 'ONE_BYTE_STRING_TYPE' });
  });

  it('keeps the text, non-ASCII included', () => {
    const s = ['{flow_id="', 'Kamera ', 'Süd ', '— 1', '"}'].join('');
    expect(flatString(s)).toBe(s);
    expect(flatString('')).toBe('');
  });
});
