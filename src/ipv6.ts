/** IPv6 addresses as bytes and as text: restrack's socket addresses and the config's `peer:` pins, printed alike. */

/** RFC 5952 text: lower case, the longest run of two or more zero groups as `::`. */
export function ipv6Text(b: Uint8Array): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((b[i]! << 8) | b[i + 1]!);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `::ffff:${Array.from(b.subarray(12, 16)).join('.')}`;
  }
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** The 16 bytes of an IPv6 address in text (`::` and a trailing dotted quad allowed), or undefined. */
export function parseIpv6(text: string): Uint8Array | undefined {
  let t = text.toLowerCase();
  const quad = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(t);
  if (quad) {
    const o = quad.slice(1).map(Number);
    if (o.some((x) => x > 255)) return undefined;
    t = `${t.slice(0, quad.index)}${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const halves = t.split('::');
  if (halves.length > 2) return undefined;
  const part = (h: string): string[] => (h === '' ? [] : h.split(':'));
  const head = part(halves[0]!);
  const tail = halves.length === 2 ? part(halves[1]!) : [];
  const fill = 8 - head.length - tail.length;
  if ((halves.length === 1 && fill !== 0) || (halves.length === 2 && fill < 1)) return undefined;
  const groups = [...head, ...(halves.length === 2 ? new Array<string>(fill).fill('0') : []), ...tail];
  if (groups.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return undefined;
  const b = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = parseInt(g, 16);
    b[2 * i] = n >> 8;
    b[2 * i + 1] = n & 0xff;
  });
  return b;
}
