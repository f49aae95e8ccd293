/** User provider profiles from YAML (`providers:`), checked like the built-ins. */
import { type ProviderProfile, ProfileRegistry, profileProblems, BUILTIN_PROFILES, DEFAULT_PROVIDER } from '../model/index.js';
import type { Fields } from '../input/fields.js';
import type { PathItem } from '../input/problems.js';

const PROFILE_KEYS = [
  'name', 'description', 'base', 'mtuOverheadBytes', 'wireOverheadBytes', 'l2HeaderBytes', 'grainHeaderBytes',
  'writeHeaderBytes', 'immediateDataBytes', 'txIovLimit', 'acksPerMessage', 'ackEveryPackets', 'ackHeaderBytes',
  'messageHeaderBytes',
] as const;
const BYTES = { required: false, min: 0, max: 1 << 20 } as const;
const COUNT = { required: false, min: 0, max: 1 << 16 } as const;

/**
 * `messageHeaderBytes` (before the write lists): bytes on every RDMA message alike. It still
 * means that: every write counts it, and no separate immediate-data bytes.
 */
function perWriteHeaders(f: Fields, base: ProviderProfile): Pick<ProviderProfile, 'writeHeaderBytes' | 'immediateDataBytes'> {
  const legacy = f.integer('messageHeaderBytes', BYTES);
  if (legacy !== undefined && (f.has('writeHeaderBytes') || f.has('immediateDataBytes'))) {
    f.report('messageHeaderBytes', 'give writeHeaderBytes and immediateDataBytes, or the older messageHeaderBytes, not both');
  }
  if (legacy !== undefined) return { writeHeaderBytes: legacy, immediateDataBytes: 0 };
  return {
    writeHeaderBytes: f.integer('writeHeaderBytes', BYTES) ?? base.writeHeaderBytes,
    immediateDataBytes: f.integer('immediateDataBytes', BYTES) ?? base.immediateDataBytes,
  };
}

/** Reads `providers:` (if present) into a registry of built-ins plus the user's profiles. */
export function readProviders(root: Fields): ProfileRegistry {
  const items = root.list('providers', false) ?? [];
  const extra: ProviderProfile[] = [];
  for (const item of items) {
    const p = readProfile(root, item.node, item.path, [...BUILTIN_PROFILES, ...extra]);
    if (p) extra.push(p);
  }
  return new ProfileRegistry(extra);
}

function readProfile(root: Fields, node: unknown, path: PathItem[], known: ProviderProfile[]): ProviderProfile | undefined {
  const f = root.child(node, path);
  if (!f) return undefined;
  f.rejectUnknown(PROFILE_KEYS);
  const before = f.problems.length;
  const name = f.string('name', true);
  if (name && known.some((k) => k.name === name)) f.report('name', `profile "${name}" is already defined`);
  const baseName = f.string('base', false) ?? DEFAULT_PROVIDER.name;
  const base = known.find((k) => k.name === baseName);
  if (!base) f.report('base', `unknown base profile "${baseName}"; known: ${known.map((k) => k.name).join(', ')}`);
  const headers = f.object('grainHeaderBytes', false);
  headers?.rejectUnknown(['video', 'audio', 'data']);
  if (!name || !base || f.problems.length > before) return undefined;
  const profile: ProviderProfile = {
    name,
    description: f.string('description', false) ?? `user profile based on ${base.name}`,
    mtuOverheadBytes: f.integer('mtuOverheadBytes', BYTES) ?? base.mtuOverheadBytes,
    wireOverheadBytes: f.integer('wireOverheadBytes', BYTES) ?? base.wireOverheadBytes,
    l2HeaderBytes: f.integer('l2HeaderBytes', BYTES) ?? base.l2HeaderBytes,
    ...perWriteHeaders(f, base),
    txIovLimit: f.integer('txIovLimit', COUNT) ?? base.txIovLimit,
    acksPerMessage: f.number('acksPerMessage', false) ?? base.acksPerMessage,
    ackEveryPackets: f.integer('ackEveryPackets', COUNT) ?? base.ackEveryPackets,
    ackHeaderBytes: f.integer('ackHeaderBytes', BYTES) ?? base.ackHeaderBytes,
    grainHeaderBytes: {
      video: headers?.integer('video', BYTES) ?? base.grainHeaderBytes.video,
      audio: headers?.integer('audio', BYTES) ?? base.grainHeaderBytes.audio,
      data: headers?.integer('data', BYTES) ?? base.grainHeaderBytes.data,
    },
  };
  for (const p of profileProblems(profile)) f.report(p.field.split('.')[0], p.message);
  return f.problems.length > before ? undefined : profile;
}
