/**
 * Typed reads of YAML/JSON mappings; every bad field becomes a Problem, none throws. The same
 * reads run over yaml's nodes (problems say where) or over plain values (the fast path: when it
 * finds a problem the caller parses again with positions); `src.tree` knows which. A node is
 * opaque here: ask Fields (isObject, valueOf), not the yaml library, what it holds.
 */
import type { PathItem, Problem, SourceText } from './problems.js';

export class Fields {
  constructor(
    readonly src: SourceText,
    /** A mapping node of `src`. */
    readonly node: unknown,
    readonly path: readonly PathItem[],
    readonly problems: Problem[],
  ) {}

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

  /** Reports keys not in `known`, with the closest known name as a hint. */
  rejectUnknown(known: readonly string[]): void {
    for (const k of this.keys()) {
      if (known.includes(k)) continue;
      this.problems.push(this.src.problem(this.src.tree.keyNode(this.node, k), [...this.path, k], `unknown field${hint(k, known)}`));
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
    return new Fields(this.src, n, [...this.path, key], this.problems);
  }

  /** Items of a sequence, each with its path; reports a non-sequence. */
  list(key: string, required: boolean): { node: unknown; path: PathItem[] }[] | undefined {
    const n = this.at(key);
    if (n === undefined) return required ? this.missing(key, 'list') : undefined;
    if (!this.src.tree.isSeq(n)) return this.bad(key, 'expected a list');
    return this.src.tree.items(n).map((item, i) => ({ node: item, path: [...this.path, key, i] }));
  }

  /** A child mapping at an arbitrary node (list item). */
  child(node: unknown, path: PathItem[]): Fields | undefined {
    if (this.src.tree.isMap(node)) return new Fields(this.src, node, path, this.problems);
    this.problems.push(this.src.problem(node, path, 'expected an object (a mapping)'));
    return undefined;
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
  return typeof v === 'string' ? `the string "${v}"` : `${typeof v} ${String(v)}`;
}

function hint(key: string, known: readonly string[]): string {
  const close = known.find((k) => distance(k.toLowerCase(), key.toLowerCase()) <= 2);
  return close ? ` (did you mean "${close}"?)` : `; known fields: ${known.join(', ')}`;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}
