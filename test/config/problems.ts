/** The problems a config text is refused with, formatted as the CLI prints them (file:line:col: field: reason). */
import { parseConfig } from '../../src/config/load.js';
import { InputError, formatProblem } from '../../src/input/problems.js';

export function configProblems(file: string, text: string): string[] {
  try {
    parseConfig(file, text);
  } catch (e) {
    if (e instanceof InputError) return e.problems.map(formatProblem);
    throw e;
  }
  throw new Error('expected InputError');
}
