/**
 * Provider profiles: transport constants per libfabric provider, as data
 * (seed section 2, "Provider Profile Contract").
 */

export interface GrainHeaderBytes {
  readonly video: number;
  readonly audio: number;
  readonly data: number;
}

export interface ProviderProfile {
  readonly name: string;
  readonly description: string;
  /** Per-packet bytes inside the L3 MTU budget (IPv4 + UDP + BTH + ICRC for RoCEv2). */
  readonly mtuOverheadBytes: number;
  /** Per-packet bytes on the wire beyond payload (mtuOverhead + preamble/SFD, IFG, Ethernet header, FCS). */
  readonly wireOverheadBytes: number;
  /** Per-packet bytes a Linux netdev counter adds to L3: the Ethernet header (no FCS, no preamble). */
  readonly l2HeaderBytes: number;
  /** Bytes written per grain beyond the media payload (MXL's grain header). */
  readonly grainHeaderBytes: GrainHeaderBytes;
  /** Bytes per RDMA message outside the payload budget (RETH on the first packet, ImmDt on the last). */
  readonly messageHeaderBytes: number;
}

/** The seed's profile, to the byte: 44 = IPv4 20 + UDP 8 + BTH 12 + ICRC 4; 82 = 44 + 8 + 12 + 14 + 4. */
export const RDMA_ROCEV2: ProviderProfile = {
  name: 'rdma_rocev2',
  description: 'MXL FabricsBandwidth.md baseline: RoCEv2 over IPv4, no VLAN, media payload only',
  mtuOverheadBytes: 44,
  wireOverheadBytes: 82,
  l2HeaderBytes: 14,
  grainHeaderBytes: { video: 0, audio: 0, data: 0 },
  messageHeaderBytes: 0,
};

/**
 * What MXL fabrics really writes: the whole grain region from its header
 * (MXL_GRAIN_PAYLOAD_OFFSET = 8192, lib/internal/include/mxl-internal/Flow.hpp;
 * ProtocolEgressRMA.cpp) for video and data, a 16-byte AudioEntryHeader per
 * audio batch (AudioBounceBuffer.hpp), one RDMA WRITE with immediate per grain:
 * RETH 16 + ImmDt 4 per message (IBA vol 1, 9.3.1; rdma-facts: +16 measured on rxe).
 */
export const RDMA_ROCEV2_MXL_V1: ProviderProfile = {
  name: 'rdma_rocev2_mxl_v1',
  description: 'RoCEv2 as MXL 1.x fabrics sends it: grain header and RDMA WRITE-with-immediate headers counted',
  mtuOverheadBytes: 44,
  wireOverheadBytes: 82,
  l2HeaderBytes: 14,
  grainHeaderBytes: { video: 8192, audio: 16, data: 8192 },
  messageHeaderBytes: 20,
};

export const BUILTIN_PROFILES: readonly ProviderProfile[] = [RDMA_ROCEV2, RDMA_ROCEV2_MXL_V1];

export class ProfileError extends Error {
  override readonly name = 'ProfileError';
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

const nonNegativeInt = (v: number): boolean => Number.isInteger(v) && v >= 0 && v < 1 << 20;

/** Checks a profile's constants; returns the problems, empty when it is sound. */
export function profileProblems(p: ProviderProfile): ProfileError[] {
  const problems: ProfileError[] = [];
  const fields: [string, number][] = [
    ['mtuOverheadBytes', p.mtuOverheadBytes],
    ['wireOverheadBytes', p.wireOverheadBytes],
    ['l2HeaderBytes', p.l2HeaderBytes],
    ['messageHeaderBytes', p.messageHeaderBytes],
    ['grainHeaderBytes.video', p.grainHeaderBytes.video],
    ['grainHeaderBytes.audio', p.grainHeaderBytes.audio],
    ['grainHeaderBytes.data', p.grainHeaderBytes.data],
  ];
  for (const [field, v] of fields) {
    if (!nonNegativeInt(v)) problems.push(new ProfileError(`${field} must be a whole number of bytes, got ${v}`, field));
  }
  if (p.wireOverheadBytes < p.mtuOverheadBytes + p.l2HeaderBytes) {
    problems.push(
      new ProfileError(
        `wireOverheadBytes (${p.wireOverheadBytes}) must be at least mtuOverheadBytes + l2HeaderBytes ` +
          `(${p.mtuOverheadBytes + p.l2HeaderBytes}) so that layers stay ordered`,
        'wireOverheadBytes',
      ),
    );
  }
  return problems;
}

export class ProfileRegistry {
  private readonly profiles = new Map<string, ProviderProfile>();

  constructor(extra: readonly ProviderProfile[] = []) {
    for (const p of [...BUILTIN_PROFILES, ...extra]) this.profiles.set(p.name, p);
  }

  get(name: string): ProviderProfile | undefined {
    return this.profiles.get(name);
  }

  names(): string[] {
    return [...this.profiles.keys()];
  }
}
