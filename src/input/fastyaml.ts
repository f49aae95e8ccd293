/**
 * A fast path for the YAML configs are written in: block mappings and sequences, flow mappings
 * and sequences on one line, plain and quoted one-line scalars, comments. It gives the plain
 * values (what yaml's toJSON() gives) without positions, in slices: a caller validates from
 * them, and parses again with `yaml` to say where a problem is. Why not `yaml` alone: at 10,000
 * flows a reload took 4 to 5 times as long with it and stalled the event loop for over a second
 * (bench/fastyaml-ab.mjs; bench/README.md, "The config's YAML fast path against `yaml`"). Anything else (anchors, aliases, tags, block scalars,
 * multi-line scalars or flow collections, several documents, tabs in indentation, duplicate
 * keys, hex/octal/inf/nan numbers...) returns undefined and the full parser takes over, so a
 * document never means something else than what `yaml` says (test/fuzz/fastyaml.test.ts
 * compares the two).
 *
 * It is a generator that yields every few thousand lines, so a caller that must keep an event
 * loop turning can pause between slices (src/config/load.ts).
 */

/** Not in the subset: the full parser decides. */
class Bail extends Error {}

interface Line {
  /** Offset of the first content character. */
  readonly at: number;
  readonly indent: number;
  /** Content without indentation and trailing comment/whitespace. */
  readonly text: string;
}

/** Lines between pauses. */
const SLICE = 200;
/** Deeper than any config: the full parser (which refuses thousands of levels with a position). */
const MAX_DEPTH = 64;

/** The root node (null for an empty document), or undefined when the text is not in the subset. */
export function* parseYamlFast(text: string): Generator<void, unknown, void> {
  const lines: Line[] = [];
  let start = 0;
  let n = 0;
  try {
    while (start <= text.length) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      const line = scanLine(text, start, end);
      if (line) lines.push(line);
      start = end + 1;
      if (++n % SLICE === 0) yield;
    }
    if (lines.length === 0) return null;
    const p = new BlockParser(lines);
    const root = yield* p.node(0, -1);
    if (p.i !== lines.length) throw new Bail();
    return root;
  } catch (e) {
    if (e instanceof Bail) return undefined;
    throw e;
  }
}

/** One line's content; undefined for blank and comment-only lines. */
function scanLine(text: string, start: number, end: number): Line | undefined {
  if (end > start && text.charCodeAt(end - 1) === 13) end--; // \r\n
  let i = start;
  while (i < end && text.charCodeAt(i) === 32) i++;
  if (i < end && text.charCodeAt(i) === 9) throw new Bail(); // tab in indentation
  if (i === end || text.charCodeAt(i) === 35) return undefined; // blank, or # comment
  const raw = text.slice(i, end);
  if (i === start && (raw.startsWith('---') || raw.startsWith('...') || raw.startsWith('%'))) throw new Bail();
  return { at: i, indent: i - start, text: stripComment(raw) };
}

/** Drops a ` # comment` outside quotes, and trailing whitespace. */
function stripComment(s: string): string {
  // Unterminated quotes without a # are caught where the scalar is read.
  if (s.indexOf('#') < 0) return s.trimEnd();
  let quote = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (quote !== 0) {
      if (c === quote) {
        if (quote === 39 && s.charCodeAt(i + 1) === 39) i++; // '' inside '...'
        else quote = 0;
      } else if (c === 92 && quote === 34) i++; // \x inside "..."
    } else if (c === 34 || c === 39) {
      // A quote starts a quoted scalar only where a scalar can start.
      const prev = i === 0 ? 32 : s.charCodeAt(i - 1);
      if (prev === 32 || prev === 123 || prev === 91 || prev === 44 || prev === 58 || prev === 45) quote = c;
    } else if (c === 35 && i > 0 && (s.charCodeAt(i - 1) === 32 || s.charCodeAt(i - 1) === 9)) {
      return s.slice(0, i).trimEnd();
    }
  }
  if (quote !== 0) throw new Bail(); // a quoted scalar runs onto the next line
  return s.trimEnd();
}

class BlockParser {
  i = 0;
  /** A line that begins inside another (`- key: value`): its content and where it sits. */
  private virtual: Line | undefined;

  constructor(private readonly lines: readonly Line[]) {}

  private current(): Line | undefined {
    return this.virtual ?? this.lines[this.i];
  }

  private advance(): void {
    if (this.virtual) this.virtual = undefined;
    else this.i++;
  }

  private depth = 0;

  /** The block node starting at the current line, which must be indented more than `parent`. */
  *node(minIndent: number, parent: number): Generator<void, unknown, void> {
    if (++this.depth > MAX_DEPTH) throw new Bail();
    try {
      return yield* this.nodeAt(minIndent, parent);
    } finally {
      this.depth--;
    }
  }

  private *nodeAt(minIndent: number, parent: number): Generator<void, unknown, void> {
    const line = this.current();
    if (!line || line.indent <= parent || line.indent < minIndent) throw new Bail();
    if (isSeqEntry(line.text)) return yield* this.seq(line.indent);
    if (mappingKey(line.text) !== undefined) return yield* this.map(line.indent);
    // A lone scalar or flow collection (the document root, or a value on its own line).
    this.advance();
    const next = this.current();
    if (next && next.indent > parent) throw new Bail(); // a multi-line scalar
    return inlineValue(line.text);
  }

  private *seq(indent: number): Generator<void, unknown[], void> {
    const seq: unknown[] = [];
    for (let line = this.current(); line && line.indent === indent && isSeqEntry(line.text); line = this.current()) {
      if (this.i % SLICE === 0 && !this.virtual) yield;
      const rest = line.text.slice(1).trimStart();
      const restAt = line.at + (line.text.length - rest.length);
      if (rest === '') {
        this.advance();
        const next = this.current();
        if (next && next.indent > indent) seq.push(yield* this.node(0, indent));
        else seq.push(null);
      } else if (isSeqEntry(rest) || mappingKey(rest) !== undefined) {
        // `- - x` or `- key: value`: the rest is a block node indented where it starts; it
        // stands in for this line.
        this.advance();
        this.virtual = { at: restAt, indent: indent + (restAt - line.at), text: rest };
        seq.push(yield* this.node(0, indent));
      } else {
        this.advance();
        const next = this.current();
        if (next && next.indent > indent) throw new Bail(); // a multi-line scalar
        seq.push(inlineValue(rest));
      }
    }
    return seq;
  }

  private *map(indent: number): Generator<void, Record<string, unknown>, void> {
    const map: Record<string, unknown> = {};
    for (let line = this.current(); line && line.indent === indent; line = this.current()) {
      if (this.i % SLICE === 0 && !this.virtual) yield;
      const key = mappingKey(line.text);
      if (key === undefined) throw new Bail();
      const name = keyOf(scalar(key.raw));
      if (Object.hasOwn(map, name)) throw new Bail(); // yaml reports duplicates
      const rest = line.text.slice(key.end).trimStart();
      let value: unknown;
      this.advance();
      if (rest === '') {
        const next = this.current();
        if (next && next.indent > indent) value = yield* this.node(0, indent);
        else if (next && next.indent === indent && isSeqEntry(next.text)) value = yield* this.seq(indent); // key:\n- item
        else value = null;
      } else {
        const next = this.current();
        if (next && next.indent > indent) throw new Bail(); // a multi-line scalar, or key: value then more
        value = inlineValue(rest);
      }
      map[name] = value;
    }
    return map;
  }
}

const isSeqEntry = (t: string): boolean => t === '-' || t.startsWith('- ');

/** `key:` at the start of a block line: the raw key and where the text after the colon starts. */
function mappingKey(t: string): { readonly raw: string; readonly end: number } | undefined {
  const c = t.charCodeAt(0);
  if (c === 34 || c === 39) {
    const close = quotedEnd(t, 0);
    if (close < 0 || t.charCodeAt(close) !== 58) return undefined;
    const after = t.charCodeAt(close + 1);
    return Number.isNaN(after) || after === 32 || after === 9 ? { raw: t.slice(0, close), end: close + 1 } : undefined;
  }
  if (c === 63 || c === 123 || c === 91) return undefined; // ? complex key, flow collection
  const colon = t.search(/:([ \t]|$)/); // a tab separates too: `key:\tvalue` (and `key:\tk: v` is no scalar)
  if (colon <= 0) return undefined;
  return { raw: t.slice(0, colon).trimEnd(), end: colon + 1 };
}

/** Index after the closing quote of the quoted scalar at `i`, or -1. */
function quotedEnd(t: string, i: number): number {
  const q = t.charCodeAt(i);
  for (let k = i + 1; k < t.length; k++) {
    const c = t.charCodeAt(k);
    if (q === 39 && c === 39) {
      if (t.charCodeAt(k + 1) === 39) k++;
      else return k + 1;
    } else if (q === 34 && c === 92) k++;
    else if (q === 34 && c === 34) return k + 1;
  }
  return -1;
}

/** Keys are strings; `__proto__` would not be one on a plain object. */
function keyOf(v: unknown): string {
  if (typeof v !== 'string' || v === '__proto__') throw new Bail();
  return v;
}

/** A value that fits on its line: a flow collection or a scalar. */
function inlineValue(t: string): unknown {
  const c = t.charCodeAt(0);
  if (c === 123 || c === 91) {
    const p = new FlowParser(t);
    const v = p.value();
    p.space();
    if (p.k !== t.length) throw new Bail();
    return v;
  }
  if ((c === 34 || c === 39) && quotedEnd(t, 0) !== t.length) throw new Bail();
  return scalar(t);
}

/** One-line flow collections: `{ a: 1, b: [x, "y"] }`. */
class FlowParser {
  k = 0;
  private depth = 0;

  constructor(private readonly t: string) {}

  /** Separation in a flow collection: spaces and tabs. */
  space(): void {
    for (let c = this.t.charCodeAt(this.k); c === 32 || c === 9; c = this.t.charCodeAt(this.k)) this.k++;
  }

  value(): unknown {
    this.space();
    const c = this.t.charCodeAt(this.k);
    if ((c === 123 || c === 91) && this.depth >= MAX_DEPTH) throw new Bail();
    if (c === 123 || c === 91) {
      this.depth++;
      const v = c === 123 ? this.map() : this.seq();
      this.depth--;
      return v;
    }
    if (c === 34 || c === 39) {
      const end = quotedEnd(this.t, this.k);
      if (end < 0) throw new Bail();
      const v = scalar(this.t.slice(this.k, end));
      this.k = end;
      return v;
    }
    const start = this.k;
    while (this.k < this.t.length) {
      const d = this.t.charCodeAt(this.k);
      if (d === 44 || d === 93 || d === 125) break; // , ] }
      if (d === 58 && this.t.charCodeAt(this.k + 1) === 32) break; // ": "
      if (d === 91 || d === 123) throw new Bail();
      this.k++;
    }
    const raw = this.t.slice(start, this.k).trimEnd();
    if (raw === '') throw new Bail(); // empty entries mean null in places and errors in others
    return scalar(raw);
  }

  private map(): Record<string, unknown> {
    const map: Record<string, unknown> = {};
    this.k++;
    this.space();
    if (this.t.charCodeAt(this.k) === 125) {
      this.k++;
    } else {
      for (;;) {
        const c0 = this.t.charCodeAt(this.k);
        if (c0 === 123 || c0 === 91) throw new Bail(); // a collection as a key
        const key = keyOf(this.value());
        if (Object.hasOwn(map, key)) throw new Bail();
        this.space();
        if (this.t.charCodeAt(this.k) !== 58) throw new Bail(); // { a } or { a, b }
        this.k++;
        const sep = this.t.charCodeAt(this.k);
        if (sep !== 32 && sep !== 9) throw new Bail(); // {a:b} is one plain scalar to yaml
        map[key] = this.value();
        this.space();
        const c = this.t.charCodeAt(this.k++);
        if (c === 125) break;
        if (c !== 44) throw new Bail();
        this.space();
        if (this.t.charCodeAt(this.k) === 125) throw new Bail(); // trailing comma
      }
    }
    return map;
  }

  private seq(): unknown[] {
    const seq: unknown[] = [];
    this.k++;
    this.space();
    if (this.t.charCodeAt(this.k) === 93) {
      this.k++;
    } else {
      for (;;) {
        const item = this.value();
        this.space();
        if (this.t.charCodeAt(this.k) === 58) throw new Bail(); // [a: b] is a pair
        seq.push(item);
        const c = this.t.charCodeAt(this.k++);
        if (c === 93) break;
        if (c !== 44) throw new Bail();
        this.space();
        if (this.t.charCodeAt(this.k) === 93) throw new Bail(); // trailing comma
      }
    }
    return seq;
  }
}

const INT = /^[-+]?[0-9]+$/;
const FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
/** Plain scalars whose first character makes them something else (or an error) in YAML. */
const INDICATOR = /^[&*!|>%@`,[\]{}#]|^[-?:](?:\s|$)/;
/** Core-schema scalars the fast path leaves to the full parser (hex, octal, inf, nan). */
const UNUSUAL = /^(?:0[ox]|[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)$)/;

/** A scalar from its source text, resolved as the YAML 1.2 core schema does. */
function scalar(raw: string): unknown {
  const c = raw.charCodeAt(0);
  if (c === 39) return raw.slice(1, -1).replace(/''/g, "'");
  if (c === 34) return doubleQuoted(raw);
  return plain(raw);
}

function plain(raw: string): unknown {
  const c = raw.charCodeAt(0);
  if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c === 47) {
    // a-z A-Z _ /: a string, unless it is one of the core schema's words.
    if (raw.length === 4) {
      if (raw === 'null' || raw === 'Null' || raw === 'NULL') return null;
      if (raw === 'true' || raw === 'True' || raw === 'TRUE') return true;
    } else if (raw.length === 5 && (raw === 'false' || raw === 'False' || raw === 'FALSE')) {
      return false;
    }
  } else {
    if (INDICATOR.test(raw)) throw new Bail();
    if (raw === '~') return null;
    if (UNUSUAL.test(raw)) throw new Bail();
    if (INT.test(raw)) return parseInt(raw, 10);
    if (FLOAT.test(raw)) return parseFloat(raw);
  }
  if (raw.includes(': ') || raw.endsWith(':') || raw.includes(' #') || raw.includes('\t')) throw new Bail(); // a tab: `:\t`, `\t#`... the full parser decides
  return raw;
}

/** Double-quoted text with JSON's escapes only; YAML's others (\x, \e, \N...) go to the full parser. */
function doubleQuoted(raw: string): string {
  // eslint-disable-next-line no-control-regex -- raw control characters are not JSON; they go to the full parser
  if (/\\[^"\\/bfnrtu]/.test(raw) || /[\u0000-\u001f]/.test(raw)) throw new Bail();
  try {
    return JSON.parse(raw) as string;
  } catch {
    throw new Bail();
  }
}
