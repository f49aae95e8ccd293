/**
 * A copy of `s` as one flat string. V8 keeps a string built by `+=` or a template literal, or by
 * JSON.stringify with a replacer, as a tree of cons strings (32 bytes a node, one node per piece)
 * until something reads it whole, and reading a string that contains it copies the pieces without
 * freeing them. A string kept for as long as its series or flow lives is copied flat once: at 32
 * ports and 1,000 flows the counters' label texts and the flows' media keys were 0.78 MB of such
 * trees (bench/README, fifth round).
 */
export function flatString(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}
