/**
 * The flow definition files a config names, read five hundred at a time in one batch (one
 * open/read/close each, O_NOFOLLOW) and parsed JSON-first (parseFlowText), so 10,000 of them
 * cost a few batches on the reader thread instead of 10,000 reads and path walks on the event
 * loop. Whether a file lives under the config's folder is decided from the same reads: the
 * folder's real path once per folder, and a full realpath only for a file that is itself a
 * symbolic link (O_NOFOLLOW refused it: ELOOP; it is read again through the link).
 */
import { constants as fsConstants, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type FlowDefinition, parseFlowText } from '../flows/definition.js';
import { InputError } from '../input/problems.js';
import { type Op, type Results } from '../reads/ops.js';
import { type ReadProgram, read } from '../reads/program.js';
import { PAUSE, type Steps, step } from './steps.js';
import { ERRNO, errnoText } from '../ffi/errno.js';

/** Files read per batch. */
const CHUNK = 500;
/**
 * A flow definition is half a KB to a KB of JSON: read this much first, the rest only if there is
 * more. The batch's output buffer is CHUNK times this (1 MB), and the pages it touches are
 * faulted in with every new buffer: 8 KB made that 4 MB and a 19 ms stall per batch.
 */
const FIRST_READ_BYTES = 2048;
/** Flow definitions are a few KB of JSON; this guards the reader against a huge file. */
const MAX_FLOW_FILE_BYTES = 16 * 1024 * 1024;
/** open(O_NOFOLLOW) of a symbolic link. */
const ELOOP = -ERRNO.ELOOP;

/** A flow definition file that could not be read (not one that does not parse): said where the config names it. */
export class FlowFileUnreadable extends Error {
  constructor(readonly file: string, readonly reason: string) {
    super(`${file}: ${reason}`);
  }
}

interface Read {
  readonly def?: FlowDefinition;
  readonly error?: InputError | FlowFileUnreadable;
  /** The file itself is a symbolic link. */
  readonly linked: boolean;
}

export class FlowFiles {
  private readonly reads = new Map<string, Read>();
  private readonly realDirs = new Map<string, string>();

  /** Reads every file not read yet (absolute paths), pausing between batches. */
  *load(files: readonly string[]): Steps<void> {
    const todo = [...new Set(files)].filter((f) => !this.reads.has(f));
    for (let at = 0; at < todo.length; at += CHUNK) {
      const chunk = todo.slice(at, at + CHUNK);
      const texts = yield* step(readChunk(chunk));
      for (let i = 0; i < chunk.length; i++) {
        const file = chunk[i]!;
        const t = texts.at(i);
        // Each text is decoded here, just before it is parsed, and is garbage right after.
        this.reads.set(file, typeof t.text !== 'string' ? { linked: t.linked, error: new FlowFileUnreadable(file, t.text.error) } : parsed(file, t.text, t.linked));
        if (i % 25 === 24) yield PAUSE;
      }
      yield PAUSE;
    }
  }

  /** The definition, as loadFlowFile() would give it: throws InputError, or FlowFileUnreadable. */
  get(file: string): FlowDefinition {
    const r = this.reads.get(file);
    if (r === undefined) throw new InputError([{ file, line: 1, col: 1, field: '', reason: 'flow definition was not read' }]);
    if (r.error) throw r.error;
    return r.def!;
  }

  /** The file's real path (the path itself when it cannot be resolved: reported when read). */
  realPath(file: string): string {
    if (this.reads.get(file)?.linked !== false) return realOr(file);
    const dir = dirname(file);
    const real = this.realDir(dir);
    return real === dir ? file : join(real, basename(file)); // `file` is normalized (resolve()d)
  }

  /** A folder's real path, resolved once per load. */
  realDir(dir: string): string {
    let real = this.realDirs.get(dir);
    if (real === undefined) this.realDirs.set(dir, (real = realOr(dir)));
    return real;
  }
}

function parsed(file: string, text: string, linked: boolean): Read {
  try {
    return { linked, def: parseFlowText(file, text) };
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    return { linked, error: e };
  }
}

type Text = { readonly linked: boolean; readonly text: string | { readonly error: string } };

/**
 * A chunk's texts: the first reads' bytes copied out of the reader's buffer into one buffer
 * (outside V8's heap), decoded one at a time by at(i); the files read again, as texts.
 */
class ChunkTexts {
  constructor(
    private readonly data: Buffer,
    /** Start and end of file i's bytes in `data`; -1 for a file in `texts`. */
    private readonly spans: Int32Array,
    private readonly texts: Text[],
  ) {}

  at(i: number): Text {
    const s = this.spans[2 * i]!;
    return s < 0 ? this.texts[i]! : { linked: false, text: this.data.toString('utf8', s, this.spans[2 * i + 1]) };
  }
}

/** The bytes of the first reads that read a whole file, copied: r1 is gone once the program yields again. */
function wholeFirstReads(r1: Results, count: number): { data: Buffer; spans: Int32Array } {
  const whole = (i: number): boolean => r1.status(i) >= 0 && r1.status(i) < FIRST_READ_BYTES;
  let total = 0;
  for (let i = 0; i < count; i++) if (whole(i)) total += r1.end(i) - r1.start(i);
  const data = Buffer.allocUnsafeSlow(total);
  const spans = new Int32Array(2 * count).fill(-1);
  let at = 0;
  for (let i = 0; i < count; i++) {
    if (!whole(i)) continue;
    spans[2 * i] = at;
    at += r1.out.copy(data, at, r1.start(i), r1.end(i));
    spans[2 * i + 1] = at;
  }
  return { data, spans };
}

/** One read of each file, not through a final symbolic link; links and files longer than the first read go again. */
function* readChunk(files: readonly string[]): ReadProgram<ChunkTexts> {
  const r1 = yield* read(files.map((path): Op => ({ kind: 'readFile', path, max: FIRST_READ_BYTES, flags: fsConstants.O_NOFOLLOW })));
  const first = wholeFirstReads(r1, files.length);
  const texts = new Array<Text>(files.length);
  const again: number[] = [];
  const linked = new Set<number>(); // decoded now: r1 is gone once this program yields again
  files.forEach((file, i) => {
    const st = r1.status(i);
    if (st === ELOOP) linked.add(i);
    if (st === ELOOP || st === FIRST_READ_BYTES) again.push(i);
    else if (st < 0) texts[i] = { linked: false, text: { error: errnoText(-st) } };
  });
  if (again.length > 0) {
    // Through the link, and as long as the file is.
    const sizes = yield* read(again.map((i): Op => ({ kind: 'stat', path: files[i]! })));
    const big = again.map((i, k) => ({ i, linked: linked.has(i), size: sizes.stat(k)?.size, error: sizes.ok(k) ? undefined : errnoText(-sizes.status(k)) }));
    const fits = big.filter((b) => b.size !== undefined && b.size <= MAX_FLOW_FILE_BYTES);
    for (const b of big) {
      if (b.error !== undefined) texts[b.i] = { linked: b.linked, text: { error: b.error } };
      else if (b.size! > MAX_FLOW_FILE_BYTES) texts[b.i] = { linked: b.linked, text: { error: `larger than a flow definition (${MAX_FLOW_FILE_BYTES} bytes)` } };
    }
    const r2 = yield* read(fits.map((b): Op => ({ kind: 'readFile', path: files[b.i]!, max: b.size! + 1 })));
    fits.forEach((b, k) => {
      const st = r2.status(k);
      if (st < 0) texts[b.i] = { linked: b.linked, text: { error: errnoText(-st) } };
      else if (st > b.size!) texts[b.i] = { linked: b.linked, text: { error: 'changed while it was read' } };
      else texts[b.i] = { linked: b.linked, text: r2.bytes(k).toString('utf8') };
    });
  }
  return new ChunkTexts(first.data, first.spans, texts);
}

/** The path with symbolic links resolved; the path itself when it does not exist (reported later). */
function realOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
