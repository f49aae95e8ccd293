/**
 * Exporter-style flags: `--config.file=F` or `--config.file F`, booleans as `--flag`. Parsed
 * here rather than by node:util so that every message is ours: an unknown flag names the
 * closest known one, a value outside a flag's choices lists them.
 */
import type { Io } from './io.js';
import { nearMiss } from '../input/fields.js';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

interface Flag {
  readonly type: 'string' | 'boolean';
  readonly help: string;
  /** Applied when the flag is not given; shown in the help. */
  readonly default?: string | boolean;
  /** The only values a string flag takes. */
  readonly choices?: readonly string[];
}
export type FlagSpec = Readonly<Record<string, Flag>>;

export interface Parsed {
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
  /** Flags the user wrote (defaults are not in it). */
  readonly given: ReadonlySet<string>;
}

export interface CommandShape {
  /** e.g. "calc [FLOW_FILE...] [flags]" */
  readonly usage: string;
  readonly summary: string;
  readonly flags: FlagSpec;
  /** Whether the command takes positional arguments (calc's flow files). */
  readonly positionals?: boolean;
}

export function parseFlags(argv: readonly string[], spec: FlagSpec, positionalsAllowed = false): Parsed {
  const values: Record<string, string | boolean | undefined> = {};
  const given = new Set<string>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h') {
      values.help = true;
      given.add('help');
      continue;
    }
    if (!arg.startsWith('-') || arg === '-') {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(arg.startsWith('--') ? 2 : 1, eq < 0 ? undefined : eq);
    const flag = Object.hasOwn(spec, name) && arg.startsWith('--') ? spec[name]! : undefined;
    if (!flag) throw new UsageError(unknownFlag(arg.slice(0, eq < 0 ? undefined : eq), spec));
    if (given.has(name)) throw new UsageError(`--${name} is given twice`);
    given.add(name);
    if (flag.type === 'boolean') {
      values[name] = eq < 0 ? true : booleanValue(name, arg.slice(eq + 1));
      continue;
    }
    const next = argv[i + 1];
    if (eq < 0 && (next === undefined || (next.startsWith('--') && next.length > 2))) throw new UsageError(`--${name} needs a value (--${name}=VALUE)`);
    const value = eq < 0 ? next! : arg.slice(eq + 1);
    if (eq < 0) i++;
    if (flag.choices && !flag.choices.includes(value)) {
      throw new UsageError(`--${name} must be one of ${flag.choices.join(', ')}; got "${value}"`);
    }
    values[name] = value;
  }
  if (positionals.length > 0 && !positionalsAllowed) {
    throw new UsageError(`unexpected argument "${positionals[0]}" (flags are written --name=value)`);
  }
  for (const [name, flag] of Object.entries(spec)) {
    if (!given.has(name) && flag.default !== undefined) values[name] = flag.default;
  }
  return { values, positionals, given };
}

function booleanValue(name: string, text: string): boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new UsageError(`--${name} is a switch: --${name}, --${name}=true or --${name}=false; got "${text}"`);
}

/** "did you mean": the one near-miss rule (nearMiss), or a flag the written name begins. */
function unknownFlag(written: string, spec: FlagSpec): string {
  const name = written.replace(/^-+/, '');
  const known = Object.keys(spec);
  const near = nearMiss(name, known) ?? (name.length >= 3 ? known.find((k) => k.startsWith(name)) : undefined);
  return `unknown flag ${written}${near ? `; did you mean --${near}?` : ''}`;
}

export function usage(shape: CommandShape): string {
  const rows = Object.entries(shape.flags).map(([name, s]) => {
    const arg = s.type === 'string' ? `=${name.split('.').pop()?.toUpperCase()}` : '';
    const choices = s.choices ? `; one of ${s.choices.join(', ')}` : '';
    const def = s.default !== undefined && s.default !== false && s.default !== '' ? ` (default: ${String(s.default)})` : '';
    return `  --${name}${arg}\n      ${s.help}${choices}${def}`;
  });
  return `usage: mxl-fabric-exporter ${shape.usage}\n\n${shape.summary}\n\nflags:\n${rows.join('\n')}\n`;
}

/**
 * Parses a command's flags. Prints the help (returns 0) or the usage error (returns 2) itself,
 * so a command only goes on with parsed flags.
 */
export function commandFlags(argv: readonly string[], io: Io, shape: CommandShape): Parsed | number {
  const command = shape.usage.split(' ')[0]!;
  try {
    const parsed = parseFlags(argv, shape.flags, shape.positionals ?? false);
    if (!parsed.values.help) return parsed;
    io.stdout(usage(shape));
    return 0;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr(`${command}: ${e.message}\nRun "mxl-fabric-exporter ${command} --help" for its flags.\n`);
    return 2;
  }
}

export const str = (p: Parsed, k: string): string | undefined => {
  const v = p.values[k];
  return typeof v === 'string' ? v : undefined;
};

export const bool = (p: Parsed, k: string): boolean => p.values[k] === true;
