/** Positioned input problems: every one names the file, line, column and field. */
import { type Document, LineCounter, isMap, isNode, isScalar, isSeq, type YAMLMap, type YAMLSeq, parseDocument, visit } from 'yaml';

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
  /** Said, but does not refuse the input (config.warnings). */
  readonly warning?: true;
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
const formatPath = (path: readonly PathItem[]): string =>
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
  /** Whether every key of the mapping is in `known` (no array made for it). */
  onlyKeys(map: unknown, known: readonly string[]): boolean;
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
  onlyKeys: (map, known) => (map as YAMLMap).items.every((p) => known.includes(keyText(p.key))),
  keyNode: (map, key) => (map as YAMLMap).items.find((i) => keyText(i.key) === key)?.key,
  items: (seq) => (seq as YAMLSeq).items,
  scalar: (n) => (isScalar(n) ? n.value : undefined),
  value: (n) => (isNode(n) ? (n.toJSON() as unknown) : n),
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
  onlyKeys: (map, known) => {
    if (!isObject(map)) return true;
    // JSON.parse and the fast path make plain objects: every enumerable key is an own key.
    for (const k in map) if (!known.includes(k)) return false;
    return true;
  },
  keyNode: () => undefined,
  items: (seq) => (!Array.isArray(seq) ? [] : seq.includes(null) ? seq.map(plainNode) : (seq as unknown[])), // read only, as yaml's own items are
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
    private readonly doc?: Document.Parsed,
    private readonly text = '',
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
    return new SourceText(file, yamlTree, doc.contents, doc.errors, lines, doc, text);
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

  /**
   * The first syntax error, said where the mistake is, and how many follow it: after one YAML
   * syntax error the parser reads the rest of the document wrongly, so the others are nearly
   * always its consequences (a missing colon after `flows` gave 14 messages, one useful).
   */
  syntaxProblems(): Problem[] {
    const first = this.errors[0];
    if (!first) return [];
    const { at, reason } = this.explain(first);
    const pos = this.lines!.linePos(at);
    const more = this.errors.length - 1;
    const after = more ? ` (${more} more syntax error${more === 1 ? '' : 's'} after it, most likely caused by it: fix this one first)` : '';
    return [{ file: this.file, line: pos.line, col: pos.col, field: '', reason: `${reason}${after}` }];
  }

  /** Where a syntax error's cause is, and what it is, for the errors whose own position misleads. */
  private explain(e: Document.Parsed['errors'][number]): { at: number; reason: string } {
    const message = e.message.split('\n')[0] ?? e.message;
    if (e.code === 'MISSING_CHAR' && /quote/.test(message)) {
      // Reported at the end of the text, where the parser gave up looking for it: the quote that
      // opened the string is the mistake.
      const open = this.unclosedQuoteAt(e.pos[0]);
      if (open !== undefined) {
        const q = this.text[open] === "'" ? "'" : '"';
        return { at: open, reason: `the string opened by ${q} here is never closed: it runs to the end of the file` };
      }
    }
    if (e.code === 'MULTILINE_IMPLICIT_KEY') {
      const lineStart = this.text.lastIndexOf('\n', e.pos[0] - 1) + 1;
      const lineEnd = this.text.indexOf('\n', e.pos[0]);
      const word = /^\s*([A-Za-z_][\w.-]*)\s*(#.*)?$/.exec(this.text.slice(lineStart, lineEnd < 0 ? undefined : lineEnd))?.[1];
      if (word) return { at: e.pos[0], reason: `"${word}" needs a colon to be a key ("${word}:"); without it the lines below are read as part of it` };
    }
    return { at: e.pos[0], reason: message };
  }

  /** The start of the quoted scalar that reaches `end` (an unclosed quote), if there is one. */
  private unclosedQuoteAt(end: number): number | undefined {
    let found: number | undefined;
    if (!this.doc) return undefined;
    visit(this.doc, {
      Scalar: (_k, n) => {
        if ((n.type === 'QUOTE_DOUBLE' || n.type === 'QUOTE_SINGLE') && n.range && n.range[1] >= end) found ??= n.range[0];
      },
    });
    return found;
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
    return this.rootNode === NULL_NODE ? null : this.rootNode;
  }
}
