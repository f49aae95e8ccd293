/** Drives test/domain/writer.mjs: a process that holds a flow's writer lock, as MXL writers do. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect } from 'vitest';

export class Writer {
  private constructor(private readonly proc: ChildProcessWithoutNullStreams, private readonly lines: AsyncIterator<string>) {}

  static async start(dataFile: string): Promise<Writer> {
    const proc = spawn(process.execPath, [join(__dirname, 'writer.mjs'), dataFile]);
    const w = new Writer(proc, createInterface({ input: proc.stdout })[Symbol.asyncIterator]());
    expect(await w.next()).toBe('ready');
    return w;
  }

  private async next(): Promise<string> {
    return (await this.lines.next()).value as string;
  }

  async advance(n: number, at: bigint): Promise<string> {
    this.proc.stdin.write(`advance ${n} ${at}\n`);
    return this.next();
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    this.proc.stdin.write('exit\n');
    await new Promise((r) => this.proc.once('exit', r));
  }
}
