/**
 * native/ is C in one style, native/.clang-format's: every file it covers is as clang-format
 * writes it (`clang-format --dry-run --Werror`): the tools (native/src) and the reader (native/reader).
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { needs, ROOT, tool } from '../deploy/tools.js';

const NATIVE = join(ROOT, 'native');
const FORMATTED = ['src', 'reader'];
const clangFormat = tool('clang-format', 'clang-format');

const sources = (dir: string): string[] =>
  readdirSync(join(NATIVE, dir)).filter((f) => /\.[ch]$/.test(f)).map((f) => join(NATIVE, dir, f));

needs(clangFormat).describe('native C style', () => {
  it.each(FORMATTED)('native/%s is as native/.clang-format writes it', (dir) => {
    const files = sources(dir);
    expect(files.length).toBeGreaterThan(0);
    const r = spawnSync(clangFormat.require(), ['--style=file:' + join(NATIVE, '.clang-format'), '--dry-run', '--Werror', ...files], { encoding: 'utf8' });
    expect(r.stderr, 'clang-format -i with native/.clang-format fixes these').toBe('');
    expect(r.status).toBe(0);
  });
});
