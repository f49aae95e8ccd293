/**
 * Every install the docs describe ships the whole install layout, bounded reader included: a
 * paragraph (or list item) of README.md or docs/ that copies the exporter to
 * /opt/mxl-fabric-exporter does it with scripts/stage.sh. A hand-made list of folders left
 * native/build/libmfe-reader.so out, and `check` then failed `reader`, `/-/ready` answered 503
 * and `reads_bounded` was 0 (issue 34).
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../deploy/tools.js';

const FILES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Paragraphs and list items, with the line each starts on. */
export function blocks(markdown: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let cur: { line: number; text: string } | undefined;
  markdown.split('\n').forEach((l, i) => {
    if (l.trim() === '' || /^\s*([-*]|\d+\.) /.test(l)) {
      if (cur) out.push(cur);
      cur = l.trim() === '' ? undefined : { line: i + 1, text: l };
    } else if (cur) cur.text += `\n${l}`;
    else cur = { line: i + 1, text: l };
  });
  if (cur) out.push(cur);
  return out;
}

/** The blocks that copy the exporter to /opt by hand instead of staging it. */
export function handCopies(markdown: string): number[] {
  return blocks(markdown)
    .filter((b) => /\bcop(y|ies|ied)\b[\s\S]{0,80}?\bto\s+`?\/opt\/mxl-fabric-exporter/i.test(b.text) && !b.text.includes('scripts/stage.sh'))
    .map((b) => b.line);
}

describe('install instructions in the docs', () => {
  it('copy the exporter to /opt only with scripts/stage.sh', () => {
    const wrong = FILES.flatMap((f) => handCopies(readFileSync(join(ROOT, f), 'utf8')).map((line) => `${f}:${line}`));
    expect(wrong, 'these install by copying a list of folders; use scripts/stage.sh (it ships native/build/libmfe-reader.so)').toEqual([]);
  });

  it('name the shipped layout where the systemd install is told in short (docs/deploy.md)', () => {
    const systemd = blocks(readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8')).find((b) => b.text.startsWith('- **systemd**'));
    expect(systemd?.text).toContain('scripts/stage.sh');
    expect(systemd?.text).not.toMatch(/copy `?dist config node_modules/);
  });

  it('finds a hand copy (control)', () => {
    expect(handCopies('- copy `dist config node_modules package.json` to\n  `/opt/mxl-fabric-exporter`, then\n\nok\n')).toEqual([1]);
    expect(handCopies('- `bash scripts/stage.sh /opt/mxl-fabric-exporter` copies the layout\n')).toEqual([]);
  });
});
