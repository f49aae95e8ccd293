/**
 * Typed arrays carved out of one ArrayBuffer. A `new Float64Array(n)` of more than 64 bytes gets
 * an ArrayBuffer of its own outside V8's heap: a JS object, a C++ backing store and a malloc'd
 * block, ~190 bytes beyond its data (bench/README.md, "Figures behind code comments"). A counter
 * set's state is a dozen arrays; 32 ports hold ~100 sets.
 */
const ARRAYS = { u8: Uint8Array, i32: Int32Array, u32: Uint32Array, f64: Float64Array } as const;
type ElementKind = keyof typeof ARRAYS;
type ArrayOf<K extends ElementKind> = InstanceType<(typeof ARRAYS)[K]>;

/** One array per entry of `layout` ([element kind, length]), all views of a single ArrayBuffer. */
export function carve<L extends Record<string, readonly [ElementKind, number]>>(layout: L): { [N in keyof L]: ArrayOf<L[N][0]> } {
  // Widest elements first, so every view starts aligned to its element size.
  const entries = Object.entries(layout).sort(([, a], [, b]) => ARRAYS[b[0]].BYTES_PER_ELEMENT - ARRAYS[a[0]].BYTES_PER_ELEMENT);
  let bytes = 0;
  for (const [, [kind, length]] of entries) bytes += ARRAYS[kind].BYTES_PER_ELEMENT * length;
  const buffer = new ArrayBuffer(bytes);
  const out: Record<string, ArrayOf<ElementKind>> = {};
  let at = 0;
  for (const [name, [kind, length]] of entries) {
    out[name] = new ARRAYS[kind](buffer, at, length);
    at += ARRAYS[kind].BYTES_PER_ELEMENT * length;
  }
  return out as { [N in keyof L]: ArrayOf<L[N][0]> };
}
