import { describe, expect, it } from 'vitest';
import { heapFloor } from './heap-floor.js';

describe('the soak\'s heap floor', () => {
  it('is the lowest heap of the stretch', () => {
    expect(heapFloor([{ t: 1, heap: 30 }, { t: 5, heap: 20 }, { t: 12, heap: 10 }], 0, 10)).toBe(20);
  });

  it('refuses a stretch no scrape reported in: a growth check over nothing must not pass (issue 33)', () => {
    // Before, Math.min() of the empty middle stretch was Infinity: end - Infinity < bound passed.
    const onlyAtTheEnd = [{ t: 55, heap: 900 }, { t: 58, heap: 950 }];
    expect(() => heapFloor(onlyAtTheEnd, 20, 30)).toThrow('no scrape reported the daemon\'s heap between 20 s and 30 s');
  });
});
