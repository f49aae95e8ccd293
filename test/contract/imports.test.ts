/**
 * The shape of src/'s imports: no circles (a module never reaches itself through what it
 * imports), and data flows one way: config and the model import no measurement source or
 * exporter code.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { circles, importGraph } from './import-graph.js';

const SRC = join(__dirname, '../../src');

describe('src imports', () => {
  const graph = importGraph(SRC);

  it('reads the graph: every module, and imports of every form', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('exporter/daemon.ts')).toContain('serial.ts');
    // A dynamic import() of a command (cli/commands.ts imports each when it is run).
    expect(graph.get('cli/commands.ts')).toContain('cli/calc.ts');
    expect(circles(new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]]))).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });

  it('has no import circles (issue 33)', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('config and the model import nothing from sources/ or exporter/ (issue 33)', () => {
    const upward = [...graph].flatMap(([m, deps]) =>
      /^(config|model)\//.test(m) ? deps.filter((d) => /^(sources|exporter)\//.test(d)).map((d) => `${m} -> ${d}`) : []);
    expect(upward).toEqual([]);
  });
});
