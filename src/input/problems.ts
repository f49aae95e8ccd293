/** Positioned input problems: every one names the file, line, column and field. */
import { type Document, LineCounter, isMap, isNode, isScalar, isSeq, type Node, type YAMLMap, type YAMLSeq, parseDocument } from 'yaml';

export interface Position {
  readonly line: number;
  readonly col: number;
}

export interface Problem {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  /** Dotted path of the field, e.g. "flows[2].flow.grain_rate.numerator". */
  readonly field: string;
  readonly reason: string;
}

export const formatProblem = (p: Problem): string =>
  `${p.file}:${p.line}:${p.col}: ${p.field ? `${p.field}: ` : ''}${p.reason}`;

/** Raised with every problem found in one input, not only the first. */
export class InputError extends Error {
  override readonly name = 'InputError';
  constructor(readonly problems: readonly Problem[]) {
    super(problems.map(formatProblem).join('\n'));
  }
}

export type PathItem = string | number;

const PLAIN_KEY = /^[A-Za-z_$][\w$-]*$/;

/** flows[2].flow.grain_rate, or tags["urn:x-nmos:tag:grouphint/v1.0"][0] for keys that need quoting. */
export const formatPath = (path: readonly PathItem[]): string =>
  path.reduce<string>((acc, k) => {
    if (typeof k === 'number') return `${acc}[${k}]`;
    if (!PLAIN_KEY.test(k)) return `${acc}[${JSON.stringify(k)}]`;
    return acc ? `${acc}.${k}` : k;
  }, '');

/**
 * How Fields walks a document: the `yaml` library's nodes, which know where they are, or the
 * plain values JSON.parse and the YAML fast path (fastyaml.ts) give, which do not. A node is
 * whatever the tree hands out; undefined means absent.
 */
export interface Tree {
  isMap(n: unknown): boolean;
  isSeq(n: unknown): boolean;
  /** A mapping's value for `key` (undefined: no such key). */
  get(map: unknown, key: string): unknown;
  has(map: unknown, key: string): boolean;
  keys(map: unknown): string[];
  /** The node of `key` itself (yaml: the key scalar, for where an unknown key is). */
  keyNode(map: unknown, key: string): unknown;
  items(seq: unknown): unknown[];
  /** A scalar's value. */
  scalar(n: unknown): unknown;
  /** Any node as plain values. */
  value(n: unknown): unknown;
}

const keyText = (k: unknown): string => String(isScalar(k) ? k.value : k);

const yamlTree: Tree = {
  isMap: (n) => isMap(n),
  isSeq: (n) => isSeq(n),
  get: (map, key) => {
    const v = (map as YAMLMap).get(key, true);
    return v === null ? undefined : v;
  },
  has: (map, key) => (map as YAMLMap).has(key),
  keys: (map) => (map as YAMLMap).items.map((p) => keyText(p.key)),
  keyNode: (map, key) => (map as YAMLMap).items.find((i) => keyText(i.key) === key)?.key,
  items: (seq) => (seq as YAMLSeq).items,
  scalar: (n) => (isScalar(n) ? n.value : undefined),
  value: (n) => (isNode(n) ? n.toJSON() : n),
};

/** JSON null is a value, not an absence: it travels as this. */
const NULL_NODE = Object.freeze({ null: true });
const plainNode = (v: unknown): unknown => (v === null ? NULL_NODE : v);
const isObject = (n: unknown): n is Record<string, unknown> => typeof n === 'object' && n !== null && n !== NULL_NODE && !Array.isArray(n);

const plainTree: Tree = {
  isMap: isObject,
  isSeq: (n) => Array.isArray(n),
  get: (map, key) => (isObject(map) && Object.hasOwn(map, key) ? plainNode(map[key]) : undefined),
  has: (map, key) => isObject(map) && Object.hasOwn(map, key),
  keys: (map) => (isObject(map) ? Object.keys(map) : []),
  keyNode: () => undefined,
  items: (seq) => (Array.isArray(seq) ? seq.map(plainNode) : []),
  scalar: (n) => (n === NULL_NODE ? null : n),
  value: (n) => (n === NULL_NODE ? null : n),
};

/** A parsed YAML or JSON text that can say where any of its nodes is (when it has positions). */
export class SourceText {
  private constructor(
    readonly file: string,
    readonly tree: Tree,
    private readonly rootNode: unknown,
    private readonly errors: Document.Parsed['errors'],
    private readonly lines: LineCounter | undefined,
  ) {}

  /** JSON is parsed as YAML 1.2 (a superset) so both report positions the same way. */
  static parse(file: string, text: string): SourceText {
    const lines = new LineCounter();
    let doc: Document.Parsed;
    try {
      doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
    } catch (e) {
      // yaml's parser recurses per nesting level; a few thousand levels ("- - - ...") overflow the
      // stack before it can report a position (found by test/fuzz).
      if (!(e instanceof RangeError)) throw e;
      throw new InputError([{ file, line: 1, col: 1, field: '', reason: `the document nests too deeply to parse (${e.message})` }]);
    }
    return new SourceText(file, yamlTree, doc.contents, doc.errors, lines);
  }

  /**
   * Plain values (JSON.parse, or the YAML fast path), many times faster to read than the YAML
   * parser's nodes but without positions: validate with them, and parse again with `parse` to
   * report what is wrong.
   */
  static plain(file: string, value: unknown): SourceText {
    return new SourceText(file, plainTree, plainNode(value), [], undefined);
  }

  /**
   * JSON read with JSON.parse, about 9x faster than the YAML parser (10,000 flow files load
   * in a fraction of the time), but without positions (see plain()). Undefined when the text
   * is not plain JSON. (JSON.parse keeps the last of duplicate keys; the YAML parser reports
   * them, so a file with any is reported there only if something else in it is wrong.)
   */
  static parseJsonFast(file: string, text: string): SourceText | undefined {
    if (!/^\s*[{[]/.test(text)) return undefined;
    try {
      return SourceText.plain(file, JSON.parse(text));
    } catch {
      return undefined;
    }
  }

  /** Whether problems found here say where they are (plain values do not). */
  get positioned(): boolean {
    return this.lines !== undefined;
  }

  syntaxProblems(): Problem[] {
    return this.errors.map((e) => {
      const pos = this.lines!.linePos(e.pos[0]);
      return { file: this.file, line: pos.line, col: pos.col, field: '', reason: e.message.split('\n')[0] ?? e.message };
    });
  }

  positionOf(node: unknown): Position {
    if (this.lines && isNode(node) && node.range) return this.lines.linePos(node.range[0]);
    return { line: 1, col: 1 };
  }

  problem(node: unknown, field: readonly PathItem[], reason: string): Problem {
    const pos = this.positionOf(node);
    return { file: this.file, line: pos.line, col: pos.col, field: formatPath(field), reason };
  }

  /** The document's root node; null for an empty document. */
  root(): unknown {
    return this.rootNode === NULL_NODE ? null : (this.rootNode as Node | null);
  }
}
