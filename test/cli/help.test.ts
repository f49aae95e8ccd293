/** Every command's --help ends its summary with its exit status, as its docs give it (issue 34: connections had none). */
import { describe, it, expect } from 'vitest';
import { main } from '../../src/cli/commands.js';

async function help(command: string): Promise<string> {
  let out = '';
  const code = await main([command, '--help'], { stdout: (t) => void (out += t), stderr: (t) => void (out += t) });
  expect(code, command).toBe(0);
  return out;
}

describe('--help', () => {
  it('of every command says its exit status', async () => {
    const expected: Record<string, RegExp> = {
      serve: /Exit status: 0 stopped by SIGTERM or SIGINT, 1 cannot start \(the address cannot be listened on\), 2 invalid config or flags\./,
      calc: /Exit status: 0 ok, 2 invalid input\./,
      check: /Exit status: 0 ok or only warnings, 1 a check failed, 2 invalid config or flags\./,
      devices: /Exit status: 0 ports found, 1 no RDMA port found, 2 invalid flags\./,
      connections: /Exit status: 0 the connection tables were read, 1 they cannot be read \(no RDMA netlink\), 2 invalid config or flags\./,
    };
    for (const [command, exit] of Object.entries(expected)) expect(await help(command), command).toMatch(exit);
  });
});
