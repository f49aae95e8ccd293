// A mount that stops answering, for the artefact tests (test/install, test/container): hungfs.c
// built with the host's compiler and libfuse3, mounted on a fresh directory. A readdir of the
// mount point blocks in the kernel until unmount() kills the server. Needs root (allow_other, so
// that a container's uid 65534 reads it too), /dev/fuse, cc, pkg-config and libfuse3-dev.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCE = fileURLToPath(new URL('hungfs.c', import.meta.url));

/** What is missing to mount one (empty when nothing is). */
export function hungfsMissing() {
  const missing = [];
  if (process.getuid?.() !== 0) missing.push('root');
  try {
    statSync('/dev/fuse');
  } catch {
    missing.push('/dev/fuse');
  }
  for (const t of ['cc', 'pkg-config', 'fusermount3']) if (spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0) missing.push(t);
  if (!missing.length && spawnSync('pkg-config', ['--exists', 'fuse3']).status !== 0) missing.push('libfuse3-dev');
  return missing;
}

/** Builds and mounts hungfs; `mountpoint` is the directory whose listing never returns. */
export async function mountHungfs() {
  const dir = mkdtempSync(join(tmpdir(), 'mfe-hungfs-'));
  const bin = join(dir, 'hungfs');
  const flags = spawnSync('pkg-config', ['--cflags', '--libs', 'fuse3'], { encoding: 'utf8' }).stdout.trim().split(/\s+/);
  const cc = spawnSync('cc', ['-Wall', '-O2', '-o', bin, SOURCE, ...flags], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`cannot build hungfs: ${cc.stderr}`);
  const mountpoint = join(dir, 'mnt');
  spawnSync('mkdir', [mountpoint]);
  const server = spawn(bin, [mountpoint, '-f', '-o', 'allow_other'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    if (spawnSync('mountpoint', ['-q', mountpoint]).status === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  // Never left behind, whatever ends this process (the server would outlive it, mounted).
  const leftover = () => {
    server.kill('SIGKILL');
    spawnSync('fusermount3', ['-u', '-z', mountpoint]);
  };
  process.once('exit', leftover);
  if (spawnSync('mountpoint', ['-q', mountpoint]).status !== 0) {
    leftover();
    throw new Error('hungfs did not mount');
  }
  return {
    mountpoint,
    async unmount() {
      process.off('exit', leftover);
      // Killing the server fails the blocked request (its connection is gone) and the reader returns.
      server.kill('SIGKILL');
      await new Promise((r) => (server.exitCode !== null || server.signalCode !== null ? r() : server.once('exit', r)));
      spawnSync('fusermount3', ['-u', '-z', mountpoint]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
