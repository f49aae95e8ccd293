/** pino, with node_exporter's two formats: logfmt (default) and json. */
import { pino, levels, type Logger, type Level } from 'pino';
import type { Writable } from 'node:stream';

export type LogFormat = 'logfmt' | 'json';
export const LOG_LEVELS: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

const quote = (v: unknown): string => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return /^[\w.:/@+-]+$/.test(s) ? s : JSON.stringify(s);
};

/** Turns pino's JSON lines into `ts=... level=... msg=... key=value` lines. */
function logfmt(out: Writable): { write(line: string): void } {
  return {
    write(line: string): void {
      const { time, level, msg, pid: _pid, hostname: _host, ...rest } = JSON.parse(line) as Record<string, unknown>;
      const fields = [`ts=${new Date(Number(time)).toISOString()}`, `level=${levels.labels[Number(level)] ?? String(level)}`];
      if (msg !== undefined) fields.push(`msg=${quote(msg)}`);
      for (const [k, v] of Object.entries(rest)) fields.push(`${k}=${quote(v)}`);
      out.write(`${fields.join(' ')}\n`);
    },
  };
}

export function createLogger(level: string, format: LogFormat, out: Writable = process.stderr): Logger {
  const options = { level, base: { pid: process.pid } };
  return format === 'json' ? pino(options, out) : pino(options, logfmt(out));
}

export type { Logger };
