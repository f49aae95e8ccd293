/** Loads the config named on the command line in a process of its own and prints what it says (load.test.ts). */
import { loadConfig } from '../../src/config/load.js';
import { InputError, formatProblem } from '../../src/input/problems.js';

try {
  loadConfig(process.argv[2]!);
  process.stdout.write('loaded\n');
} catch (e) {
  process.stdout.write(`${e instanceof InputError ? e.problems.map(formatProblem).join('\n') : String(e)}\n`);
}
