import { describe, it, expect } from 'vitest';
import { parseFlags, usage, type FlagSpec } from '../../src/cli/args.js';

const SPEC: FlagSpec = {
  'config.file': { type: 'string', help: 'config', default: '/etc/x.yaml' },
  output: { type: 'string', help: 'format', default: 'text', choices: ['text', 'json'] },
  'web.enable-lifecycle': { type: 'boolean', help: 'lifecycle', default: false },
  help: { type: 'boolean', help: 'help' },
};

describe('flags', () => {
  it('reads --name=value and --name value, applies defaults, and knows what was written', () => {
    const p = parseFlags(['--config.file=/a.yaml', '--output', 'json', '--web.enable-lifecycle'], SPEC);
    expect(p.values).toEqual({ 'config.file': '/a.yaml', output: 'json', 'web.enable-lifecycle': true });
    expect([...p.given]).toEqual(['config.file', 'output', 'web.enable-lifecycle']);
    const d = parseFlags([], SPEC);
    expect(d.values).toEqual({ 'config.file': '/etc/x.yaml', output: 'text', 'web.enable-lifecycle': false });
    expect(d.given.size).toBe(0);
    expect(parseFlags(['--web.enable-lifecycle=false'], SPEC).values['web.enable-lifecycle']).toBe(false);
  });

  it('takes positionals only where a command has them, and everything after --', () => {
    expect(parseFlags(['a.json', '--', '--b.json'], SPEC, true).positionals).toEqual(['a.json', '--b.json']);
    expect(() => parseFlags(['a.json'], SPEC)).toThrow('unexpected argument "a.json" (flags are written --name=value)');
  });

  it('says what is wrong in its own words', () => {
    expect(() => parseFlags(['--config.fiel=x'], SPEC)).toThrow('unknown flag --config.fiel; did you mean --config.file?');
    expect(() => parseFlags(['--outptu', 'json'], SPEC)).toThrow('unknown flag --outptu; did you mean --output?');
    expect(() => parseFlags(['-x'], SPEC)).toThrow('unknown flag -x');
    expect(() => parseFlags(['--zzz'], SPEC)).toThrow(/^unknown flag --zzz$/);
    expect(() => parseFlags(['--output', 'yaml'], SPEC)).toThrow('--output must be one of text, json; got "yaml"');
    expect(() => parseFlags(['--config.file'], SPEC)).toThrow('--config.file needs a value (--config.file=VALUE)');
    expect(() => parseFlags(['--config.file', '--output=json'], SPEC)).toThrow('--config.file needs a value');
    expect(() => parseFlags(['--output=json', '--output=text'], SPEC)).toThrow('--output is given twice');
    expect(() => parseFlags(['--web.enable-lifecycle=yes'], SPEC)).toThrow('--web.enable-lifecycle is a switch: --web.enable-lifecycle, --web.enable-lifecycle=true or --web.enable-lifecycle=false; got "yes"');
  });

  it('lists choices and defaults in the help', () => {
    const text = usage({ usage: 'check [flags]', summary: 'Checks.', flags: SPEC });
    expect(text).toContain('  --output=OUTPUT\n      format; one of text, json (default: text)\n');
    expect(text).toContain('  --web.enable-lifecycle\n      lifecycle\n');
  });
});
