/**
 * Markdown as GitHub renders it, for the tests that read the docs: headings and their anchors,
 * links, sections. Fenced code blocks are skipped (a `# comment` in a shell block is no heading).
 */

/** GitHub's heading anchor: lower case, punctuation dropped, each blank a hyphen. */
function githubSlug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The lines outside fenced code blocks, with their 1-based line numbers. */
export function proseLines(markdown: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, i) => {
    const f = /^\s*(```|~~~)/.exec(text)?.[1];
    if (f !== undefined && (fence === undefined || fence === f)) {
      fence = fence === undefined ? f : undefined;
      return;
    }
    if (fence === undefined) out.push({ line: i + 1, text });
  });
  return out;
}

export interface Heading { level: number; text: string; anchor: string; line: number }

/** Every ATX heading with the anchor GitHub gives it (a repeated one gets -1, -2, ...). */
export function headings(markdown: string): Heading[] {
  const seen = new Map<string, number>();
  const out: Heading[] = [];
  for (const { line, text } of proseLines(markdown)) {
    const m = /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(text);
    if (!m) continue;
    const slug = githubSlug(m[2]!);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.push({ level: m[1]!.length, text: m[2]!, anchor: n === 0 ? slug : `${slug}-${n}`, line });
  }
  return out;
}

export interface Link { target: string; line: number }

/** Inline links and images `[..](target)` and reference definitions `[x]: target`, outside code. */
export function links(markdown: string): Link[] {
  const out: Link[] = [];
  for (const { line, text } of proseLines(markdown)) {
    const prose = text.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1]!, line });
    const ref = /^\s{0,3}\[[^\]]+\]:\s+(\S+)/.exec(prose);
    if (ref) out.push({ target: ref[1]!, line });
  }
  return out;
}

/** The text of the section under the heading `title` (any level), up to the next heading of its level or above. */
export function section(markdown: string, title: string): string {
  const lines = markdown.split('\n');
  const all = headings(markdown);
  const i = all.findIndex((h) => h.text === title);
  if (i < 0) throw new Error(`no heading "${title}"`);
  const end = all.slice(i + 1).find((h) => h.level <= all[i]!.level);
  return lines.slice(all[i]!.line, end === undefined ? lines.length : end.line - 1).join('\n');
}
