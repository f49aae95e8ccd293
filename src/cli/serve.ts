/** `serve`: run the exporter until SIGTERM/SIGINT; SIGHUP reloads the config. */
import { existsSync } from 'node:fs';
import { Daemon } from '../exporter/daemon.js';
import { ListenAddressError, parseListenAddress } from '../exporter/http.js';
import { createLogger, LOG_LEVELS, type LogFormat } from '../log.js';
import { InputError, formatProblem } from '../input/problems.js';
import { DEFAULT_SYSFS_ROOT } from '../sources/sysfs/index.js';
import { type CommandShape, type FlagSpec, bool, commandFlags, str, UsageError } from './args.js';
import type { Io } from './io.js';

/**
 * Where a host's config lives. Not the shipped example: that one names mlx5_0 and would report
 * false drift on a real host with such a device (`npm start` names the example explicitly).
 */
export const DEFAULT_CONFIG = '/etc/mxl-fabric-exporter/config.yaml';
export const DEFAULT_LISTEN = ':9842';

export const SERVE_FLAGS: FlagSpec = {
  'config.file': { type: 'string', default: DEFAULT_CONFIG, help: 'YAML config: ports, flows, sampling, drift tolerance' },
  'web.listen-address': { type: 'string', default: DEFAULT_LISTEN, help: 'address to listen on, [host]:port' },
  'web.telemetry-path': { type: 'string', default: '/metrics', help: 'path under which to expose metrics' },
  'web.config.file': { type: 'string', default: '', help: 'exporter-toolkit web config: TLS, basic auth, headers (empty: plain HTTP, no auth)' },
  'web.enable-lifecycle': { type: 'boolean', default: false, help: 'allow POST /-/reload over HTTP (403 without it; SIGHUP always reloads)' },
  'path.sysfs': { type: 'string', default: DEFAULT_SYSFS_ROOT, help: 'sysfs mountpoint; every file the exporter reads is under it' },
  'log.level': { type: 'string', default: 'info', help: 'only log messages at this level or above', choices: LOG_LEVELS },
  'log.format': { type: 'string', default: 'logfmt', help: 'log line format', choices: ['logfmt', 'json'] },
  help: { type: 'boolean', help: 'show this help' },
};

const SHAPE: CommandShape = {
  usage: 'serve [flags]',
  summary: `Serves predicted and measured MXL flow bandwidth as Prometheus metrics.
SIGHUP (or POST /-/reload with --web.enable-lifecycle) re-reads the config; a bad config keeps the running one.
Exit status: 0 stopped by SIGTERM or SIGINT, 1 cannot start (the address cannot be listened on), 2 invalid config or flags.`,
  flags: SERVE_FLAGS,
};

export async function runServe(argv: string[], io: Io): Promise<number> {
  const flags = commandFlags(argv, io, SHAPE);
  if (typeof flags === 'number') return flags;
  try {
    checkTelemetryPath(str(flags, 'web.telemetry-path')!);
    checkListenAddress(str(flags, 'web.listen-address')!);
    checkConfigFile(str(flags, 'config.file')!, flags.given.has('config.file'));
  } catch (e) {
    io.stderr(`serve: ${(e as Error).message}\n`);
    return 2;
  }
  const log = createLogger(str(flags, 'log.level')!, str(flags, 'log.format') as LogFormat);
  const daemon = new Daemon({
    configFile: str(flags, 'config.file')!,
    listenAddress: str(flags, 'web.listen-address')!,
    telemetryPath: str(flags, 'web.telemetry-path')!,
    sysfsRoot: str(flags, 'path.sysfs')!,
    webConfigFile: str(flags, 'web.config.file') ?? '',
    enableLifecycle: bool(flags, 'web.enable-lifecycle'),
    log,
  });
  try {
    await daemon.start();
  } catch (e) {
    if (e instanceof InputError) {
      // Said once, one line per problem: by the log, or plainly when --log.level hides errors.
      if (log.isLevelEnabled('error')) for (const p of e.problems) log.error({ problem: formatProblem(p) }, 'invalid config');
      else io.stderr(`${e.problems.map(formatProblem).join('\n')}\n`);
      await daemon.stop();
      return 2;
    }
    log.error({ err: (e as Error).message }, 'cannot start');
    return 1;
  }
  return waitForSignals(daemon, log);
}

/** A missing config file is a usage error that says where the example is, not a stack of YAML errors. */
export function checkConfigFile(file: string, given: boolean): void {
  if (existsSync(file)) return;
  const how = given ? '' : ' (the default --config.file)';
  throw new UsageError(`config file ${file}${how} does not exist; give --config.file=FILE. ` +
    'To try the exporter, the shipped example is config/example.yaml (npm start uses it); docs/configuration.md describes the keys');
}

/** Before anything is probed: a bad address is a usage error (exit 2), as every flag's is. */
function checkListenAddress(addr: string): void {
  try {
    parseListenAddress(addr);
  } catch (e) {
    if (!(e instanceof ListenAddressError)) throw e;
    // The form is wrong: show the forms; otherwise the message says which part is wrong.
    throw new UsageError(e.form ? `${e.message}: give host:port or :port, e.g. --web.listen-address=:9842 or 127.0.0.1:9842` : e.message);
  }
}

function checkTelemetryPath(path: string): void {
  if (!path.startsWith('/') || ['/', '/-/healthy', '/-/ready', '/-/reload'].includes(path)) {
    throw new UsageError(`--web.telemetry-path "${path}" must start with / and not clash with /, /-/healthy, /-/ready or /-/reload`);
  }
}

function waitForSignals(daemon: Daemon, log: ReturnType<typeof createLogger>): Promise<number> {
  return new Promise((resolve) => {
    const onHup = (): void => void daemon.reload();
    const onStop = (signal: string) => (): void => {
      log.info({ signal }, 'shutting down');
      process.off('SIGHUP', onHup);
      void daemon.stop().then(() => resolve(0));
    };
    process.on('SIGHUP', onHup);
    process.once('SIGTERM', onStop('SIGTERM'));
    process.once('SIGINT', onStop('SIGINT'));
  });
}
