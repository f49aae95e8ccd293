/**
 * A copy of `s` as one flat string. V8 keeps a string built by `+=` or a template literal, or by
 * JSON.stringify with a replacer, as a tree of cons strings (32 bytes a node, one node per piece)
 * until something reads it whole, and reading a string that contains it copies the pieces without
 * freeing them. A string kept for as long as its series or flow lives is copied flat once (what
 * such trees weighed: bench/README.md, "Figures behind code comments").
 */
export function flatString(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}
