/**
 * Typed reads of YAML/JSON mappings; every bad field becomes a Problem, none throws. The same
 * reads run over yaml's nodes (problems say where) or over plain values (the fast path: when it
 * finds a problem the caller parses again with positions); `src.tree` knows which. A node is
 * opaque here: ask Fields (isObject, valueOf), not the yaml library, what it holds.
 */
import type { PathItem, Problem, SourceText } from './problems.js';

/**
 * An item of a sequence (Fields.list()), with its path. The path is made when asked for: a
 * 10,000-flow config asks for it only where something is wrong.
 */
export class ListItem {
  constructor(
    readonly node: unknown,
    readonly owner: Fields,
    readonly key: string,
    readonly index: number,
  ) {}

  get path(): PathItem[] {
    return [...this.owner.path, this.key, this.index];
  }
}

export class Fields {
  private madePath: readonly PathItem[] | undefined;

  /**
   * `path` is this mapping's path; or, for a child read below `parent`, undefined and made from
   * the parent's path and `key` (and `index`) when a problem needs it.
   */
  constructor(
    readonly src: SourceText,
    /** A mapping node of `src`. */
    readonly node: unknown,
    path: readonly PathItem[] | undefined,
    readonly problems: Problem[],
    private readonly parent?: Fields,
    private readonly key?: PathItem,
    private readonly index?: number,
  ) {
    this.madePath = path;
  }

  /** Dotted into problems' `field`; see the constructor. */
  get path(): readonly PathItem[] {
    if (this.madePath === undefined) {
      const above = this.parent!.path;
      this.madePath = this.index === undefined ? [...above, this.key!] : [...above, this.key!, this.index];
    }
    return this.madePath;
  }

  /** Reads the document root (or reports it) as a mapping. */
  static root(src: SourceText, problems: Problem[]): Fields | undefined {
    const root = src.root();
    if (src.tree.isMap(root)) return new Fields(src, root, [], problems);
    problems.push(src.problem(root, [], 'expected a mapping (an object) at the top level'));
    return undefined;
  }

  at(key: string): unknown {
    return this.src.tree.get(this.node, key);
  }

  has(key: string): boolean {
    return this.src.tree.has(this.node, key);
  }

  keys(): string[] {
    return this.src.tree.keys(this.node);
  }

  /** Whether a node (from at() or list()) is a mapping. */
  isObject(node: unknown): boolean {
    return this.src.tree.isMap(node);
  }

  /** A node as plain values. */
  valueOf(node: unknown): unknown {
    return this.src.tree.value(node);
  }

  report(key: string | undefined, reason: string): void {
    const node = key === undefined ? this.node : (this.at(key) ?? this.node);
    this.problems.push(this.src.problem(node, key === undefined ? this.path : [...this.path, key], reason));
  }

  /** Like report(), as a warning: said where it is, without refusing the input. */
  warn(key: string, reason: string): void {
    this.problems.push({ ...this.src.problem(this.at(key) ?? this.node, [...this.path, key], reason), warning: true });
  }

  /** Reports keys not in `known`, with the closest known name as a hint. */
  rejectUnknown(known: readonly string[]): void {
    if (this.src.tree.onlyKeys(this.node, known)) return;
    for (const k of this.keys()) {
      if (known.includes(k)) continue;
      this.problems.push(this.src.problem(this.src.tree.keyNode(this.node, k), [...this.path, k], `unknown field${hint(k, known)}`));
    }
  }

  /**
   * Reports keys not in `known` that are a near miss of one (nearMiss()), naming it; keys far
   * from every known one are left alone (extensions of an open format, as NMOS flows are).
   */
  rejectNearMisses(known: readonly string[]): void {
    if (this.src.tree.onlyKeys(this.node, known)) return;
    for (const k of this.keys()) {
      if (known.includes(k)) continue;
      const close = nearMiss(k, known);
      if (close) this.problems.push(this.src.problem(this.src.tree.keyNode(this.node, k), [...this.path, k], `unknown field (did you mean "${close}"?)`));
    }
  }

  missing(key: string, what: string): undefined {
    this.problems.push(this.src.problem(this.node, [...this.path, key], `required ${what} is missing`));
    return undefined;
  }

  scalar(key: string): unknown {
    const n = this.at(key);
    if (n === undefined) return undefined;
    const t = this.src.tree;
    return t.isMap(n) || t.isSeq(n) ? NOT_SCALAR : t.scalar(n);
  }

  string(key: string, required: boolean): string | undefined {
    const v = this.scalar(key);
    if (v === undefined) return required ? this.missing(key, 'string') : undefined;
    if (typeof v !== 'string') return this.bad(key, `expected a string, got ${describe(v)}`);
    return v;
  }

  number(key: string, required: boolean): number | undefined {
    const v = this.scalar(key);
    if (v === undefined) return required ? this.missing(key, 'number') : undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) return this.bad(key, `expected a number, got ${describe(v)}`);
    return v;
  }

  integer(key: string, opts: { required: boolean; min?: number; max?: number }): number | undefined {
    const v = this.number(key, opts.required);
    if (v === undefined) return undefined;
    if (!Number.isInteger(v)) return this.bad(key, `expected a whole number, got ${v}`);
    const { min, max } = opts;
    if ((min !== undefined && v < min) || (max !== undefined && v > max)) {
      return this.bad(key, `${v} is out of range ${min ?? '-inf'}..${max ?? 'inf'}`);
    }
    return v;
  }

  boolean(key: string): boolean | undefined {
    const v = this.scalar(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') return this.bad(key, `expected true or false, got ${describe(v)}`);
    return v;
  }

  oneOf<T extends string>(key: string, allowed: readonly T[], required: boolean): T | undefined {
    const v = this.string(key, required);
    if (v === undefined) return undefined;
    if (!(allowed as readonly string[]).includes(v)) {
      return this.bad(key, `"${v}" is not one of ${allowed.map((a) => `"${a}"`).join(', ')}`);
    }
    return v as T;
  }

  object(key: string, required: boolean): Fields | undefined {
    const n = this.at(key);
    if (n === undefined) return required ? this.missing(key, 'object') : undefined;
    if (!this.src.tree.isMap(n)) return this.bad(key, 'expected an object (a mapping)');
    return new Fields(this.src, n, undefined, this.problems, this, key);
  }

  /** The mapping `node` (isObject()) below this one, at `key` (and `index`, for a list item). */
  below(node: unknown, key: string, index?: number): Fields {
    return new Fields(this.src, node, undefined, this.problems, this, key, index);
  }

  /** Items of a sequence, each with its path; reports a non-sequence. */
  list(key: string, required: boolean): ListItem[] | undefined {
    const n = this.at(key);
    if (n === undefined) return required ? this.missing(key, 'list') : undefined;
    if (!this.src.tree.isSeq(n)) return this.bad(key, 'expected a list');
    return this.src.tree.items(n).map((item, i) => new ListItem(item, this, key, i));
  }

  /** A child mapping at an arbitrary node (list item). */
  child(node: unknown, path: PathItem[]): Fields | undefined {
    if (this.src.tree.isMap(node)) return new Fields(this.src, node, path, this.problems);
    this.problems.push(this.src.problem(node, path, 'expected an object (a mapping)'));
    return undefined;
  }

  /** child() of a list() item of this mapping, its path made only if a problem needs it. */
  item(item: ListItem): Fields | undefined {
    return this.src.tree.isMap(item.node) ? item.owner.below(item.node, item.key, item.index) : this.child(item.node, item.path);
  }

  private bad(key: string, reason: string): undefined {
    this.report(key, reason);
    return undefined;
  }
}

const NOT_SCALAR = Symbol('not a scalar');

function describe(v: unknown): string {
  if (v === NOT_SCALAR) return 'a list or object';
  if (v === null) return 'null';
  return typeof v === 'string' ? `the string "${v}"` : `${typeof v} ${scalarText(v)}`;
}

/** A YAML scalar's value as text: scalars are strings, numbers, booleans, bigints or null; anything else is shown as JSON. */
export function scalarText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v === null || v === undefined) return String(v);
  return JSON.stringify(v) ?? typeof v;
}

function hint(key: string, known: readonly string[]): string {
  const close = nearMiss(key, known);
  return close ? ` (did you mean "${close}"?)` : `; known fields: ${known.join(', ')}`;
}

/**
 * The known name `written` most likely means, if it is a near miss of one: equal ignoring case,
 * or within 2 edits (1 for names of 4 characters or fewer, where 2 edits make another word;
 * a swap of neighbours is one edit). The one rule for "did you mean" (config keys, flow fields,
 * flags).
 */
export function nearMiss(written: string, known: readonly string[]): string | undefined {
  const w = written.toLowerCase();
  let best: { name: string; d: number } | undefined;
  for (const k of known) {
    const d = distance(k.toLowerCase(), w);
    if (d <= (k.length <= 4 ? 1 : 2) && (best === undefined || d < best.d)) best = { name: k, d };
  }
  return best?.name;
}

/** Edit distance with a swap of neighbours as one edit (optimal string alignment). */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}
