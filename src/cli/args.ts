/** Exporter-style flags (`--config.file=F` or `--config.file F`), parsed with node:util. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Io } from './io.js';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export type FlagSpec = Record<string, { type: 'string' | 'boolean'; multiple?: boolean; default?: string | boolean; help: string }>;

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export function parseFlags(argv: string[], spec: FlagSpec): Parsed {
  const options: ParseArgsConfig['options'] = {};
  for (const [name, s] of Object.entries(spec)) {
    options[name] = { type: s.type, ...(s.multiple ? { multiple: true } : {}), ...(s.default !== undefined ? { default: s.default } : {}) };
  }
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values: values as Parsed['values'], positionals };
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
}

export function usage(command: string, summary: string, spec: FlagSpec): string {
  const rows = Object.entries(spec).map(([name, s]) => {
    const arg = s.type === 'string' ? `=${name.split('.').pop()?.toUpperCase()}` : '';
    const def = s.default !== undefined && s.default !== false && s.default !== '' ? ` (default: ${String(s.default)})` : '';
    return `  --${name}${arg}\n      ${s.help}${def}`;
  });
  return `usage: mxl-fabric-exporter ${command}\n\n${summary}\n\nflags:\n${rows.join('\n')}\n`;
}

/**
 * Parses a command's flags. Prints the help (returns 0) or the usage error (returns 2)
 * itself, so a command only goes on with parsed flags.
 */
export function commandFlags(argv: string[], io: Io, command: string, summary: string, spec: FlagSpec): Parsed | number {
  try {
    const parsed = parseFlags(argv, spec);
    if (!parsed.values.help) return parsed;
    io.stdout(usage(command, summary, spec));
    return 0;
  } catch (e) {
    io.stderr(`${command.split(' ')[0]}: ${(e as Error).message}\n\n${usage(command, summary, spec)}`);
    return 2;
  }
}

export const str = (p: Parsed, k: string): string | undefined => {
  const v = p.values[k];
  return typeof v === 'string' ? v : undefined;
};
