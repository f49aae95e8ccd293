/** mxl-fabric-exporter: `serve` (default), `calc`, `check`, `devices`, `connections`, `version`. */
import { processIo, type Io } from './io.js';
import { BUILD } from '../build-info.js';

const COMMANDS = `usage: mxl-fabric-exporter <command> [flags]

commands:
  serve     run the exporter (default when no command is given)
  calc      compute a flow's wire cost with the model
  check     validate a config and report each port's provisioning
  devices   list RDMA ports, their attributes and counter sources
  connections  list RDMA connections with their process, MXL flow and packets/s
  version   print the version and revision (also --version)

Run \`mxl-fabric-exporter <command> --help\` for a command's flags.
`;

type Command = (argv: string[], io: Io) => number | Promise<number>;

const commands: Record<string, () => Promise<Command>> = {
  calc: async () => (await import('./calc.js')).runCalc,
  serve: async () => (await import('./serve.js')).runServe,
  check: async () => (await import('./check.js')).runCheck,
  devices: async () => (await import('./devices.js')).runDevices,
  connections: async () => (await import('./connections.js')).runConnections,
  version: () => Promise.resolve(runVersion),
};

const runVersion: Command = (argv, io) => {
  if (argv.length > 0) {
    io.stderr(`version: takes no arguments, got "${argv[0]}"\n`);
    return 2;
  }
  io.stdout(versionText());
  return 0;
};

/** As Prometheus exporters print it: version, revision, runtime. */
function versionText(): string {
  return `mxl-fabric-exporter, version ${BUILD.version} (revision: ${BUILD.revision})\n  node: ${BUILD.nodeVersion}\n`;
}

export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') {
    io.stdout(COMMANDS);
    return 0;
  }
  if (first === '--version') {
    io.stdout(versionText());
    return 0;
  }
  if (first === undefined || first.startsWith('-')) return (await commands.serve!())(argv, io);
  const load = commands[first];
  if (!load) {
    io.stderr(`unknown command "${first}"\n\n${COMMANDS}`);
    return 2;
  }
  return (await load())(rest, io);
}
