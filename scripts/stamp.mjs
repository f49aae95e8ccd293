// Writes dist/build.json with the git revision, read from .git without running git, and makes
// the CLI entry point executable (so a symlink to it on PATH runs it).
// MXL_FABRIC_EXPORTER_REVISION overrides it (a container build from a tree without .git).
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The git directory: `.git` itself, or the one a worktree's `.git` file points at. */
function gitDir() {
  if (!existsSync('.git')) return undefined;
  if (statSync('.git').isDirectory()) return '.git';
  const m = /^gitdir: (.+)$/m.exec(readFileSync('.git', 'utf8'));
  return m ? resolve(m[1].trim()) : undefined;
}

/** Refs live in the common directory for a worktree (its `commondir` file says where). */
function commonDir(dir) {
  const f = join(dir, 'commondir');
  return existsSync(f) ? resolve(dir, readFileSync(f, 'utf8').trim()) : dir;
}

function revision() {
  if (process.env.MXL_FABRIC_EXPORTER_REVISION) return process.env.MXL_FABRIC_EXPORTER_REVISION;
  try {
    const dir = gitDir();
    if (!dir) return 'unknown';
    const head = readFileSync(join(dir, 'HEAD'), 'utf8').trim();
    if (!head.startsWith('ref: ')) return head;
    const ref = head.slice(5);
    for (const d of [dir, commonDir(dir)]) {
      if (existsSync(join(d, ref))) return readFileSync(join(d, ref), 'utf8').trim();
    }
    const packed = readFileSync(join(commonDir(dir), 'packed-refs'), 'utf8').split('\n').find((l) => l.endsWith(` ${ref}`));
    return packed ? packed.split(' ')[0] : 'unknown';
  } catch {
    return 'unknown';
  }
}

mkdirSync('dist', { recursive: true });
writeFileSync('dist/build.json', `${JSON.stringify({ revision: revision() })}\n`);
if (existsSync('dist/cli/main.js')) chmodSync('dist/cli/main.js', 0o755);
