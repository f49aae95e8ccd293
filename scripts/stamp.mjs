// Writes dist/build.json with the git revision, read from .git without running git.
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';

function revision() {
  try {
    const head = readFileSync('.git/HEAD', 'utf8').trim();
    if (!head.startsWith('ref: ')) return head;
    const ref = head.slice(5);
    if (existsSync(`.git/${ref}`)) return readFileSync(`.git/${ref}`, 'utf8').trim();
    const packed = readFileSync('.git/packed-refs', 'utf8').split('\n').find((l) => l.endsWith(` ${ref}`));
    return packed ? packed.split(' ')[0] : 'unknown';
  } catch {
    return 'unknown';
  }
}

mkdirSync('dist', { recursive: true });
writeFileSync('dist/build.json', `${JSON.stringify({ revision: revision() })}\n`);
