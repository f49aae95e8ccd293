/**
 * No broken internal link in the docs: in every committed Markdown file (README, docs/, and the
 * READMEs beside the code), every relative link names a file or folder that exists, and every
 * `#anchor` (in the same file or another Markdown file) is a heading there, by GitHub's rules.
 */
import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from '../deploy/tools.js';
import { headings, links } from './markdown.js';

/** Every Markdown file of the checkout git knows or would add (the fixtures' SOURCE.md notes included). */
const FILES = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);

const anchorsOf = new Map<string, Set<string>>();
function anchors(file: string): Set<string> {
  if (!anchorsOf.has(file)) anchorsOf.set(file, new Set(headings(readFileSync(file, 'utf8')).map((h) => h.anchor)));
  return anchorsOf.get(file)!;
}

/** What is wrong with one link from `from` (absolute), or undefined. */
export function brokenLink(from: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto:, file: ...
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const file = path === '' ? from : resolve(dirname(from), decodeURIComponent(path));
  if (!file.startsWith(ROOT)) return `${target}: leaves the repository`;
  if (!existsSync(file)) return `${target}: ${relative(ROOT, file)} does not exist`;
  if (anchor === undefined) return undefined;
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return `${target}: an anchor into a file that is not Markdown`;
  return anchors(file).has(anchor) ? undefined : `${target}: ${relative(ROOT, file)} has no heading #${anchor}`;
}

describe('internal links in the Markdown files', () => {
  it('covers the README and every page under docs/', () => {
    expect(FILES).toContain('README.md');
    expect(FILES.filter((f) => f.startsWith('docs/')).length).toBeGreaterThanOrEqual(12);
  });

  it('every relative link and #anchor resolves', () => {
    const broken: string[] = [];
    for (const f of FILES) {
      const abs = join(ROOT, f);
      for (const l of links(readFileSync(abs, 'utf8'))) {
        const why = brokenLink(abs, l.target);
        if (why !== undefined) broken.push(`${f}:${l.line}: ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds what is broken (a missing file, a missing anchor, an anchor in a code block)', () => {
    const readme = join(ROOT, 'README.md');
    expect(brokenLink(readme, 'docs/nope.md')).toMatch(/does not exist/);
    expect(brokenLink(readme, 'docs/alerts.md#nope')).toMatch(/has no heading #nope/);
    expect(brokenLink(readme, 'docs/alerts.md#mxlfabricmodeldrift')).toBeUndefined();
    expect(brokenLink(readme, 'https://example.net/x#y')).toBeUndefined();
    expect(headings('```sh\n# not a heading\n```\n## A `b` (c)\n## A `b` (c)\n').map((h) => h.anchor)).toEqual(['a-b-c', 'a-b-c-1']);
    expect(links('`[x](nope.md)`\n[y](ok.md "t")\n[r]: ref.md\n').map((l) => l.target)).toEqual(['ok.md', 'ref.md']);
  });
});
