/**
 * Provider profiles: transport constants per libfabric provider, as data
 * (seed section 2, "Provider Profile Contract").
 */

interface GrainHeaderBytes {
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
  /** Bytes on the first packet of every RDMA WRITE outside the payload budget (RETH, IBA 9.3.1: 16). */
  readonly writeHeaderBytes: number;
  /** Bytes on the last packet of a write that carries immediate data (ImmDt, IBA 9.3.1: 4). */
  readonly immediateDataBytes: number;
  /**
   * Scatter-gather entries one RDMA write may carry: a longer list goes out as
   * ceil(entries / limit) writes (MXL ofi/Endpoint.cpp:356-392). libfabric verbs: 4
   * (prov/verbs/src/verbs_init.c:50, FI_VERBS_TX_IOV_LIMIT). 0: no limit, one write.
   */
  readonly txIovLimit: number;
  /** Acknowledgements the responder returns per acknowledged run of a message; 0: ACKs not modelled. */
  readonly acksPerMessage: number;
  /**
   * The requester also asks for an ACK every this many packets inside a long message
   * (rxe: 66, drivers/infiniband/sw/rxe/rxe_req.c, RXE_MAX_PKT_PER_ACK 64); 0: only at its end.
   */
  readonly ackEveryPackets: number;
  /** Bytes an ACK carries beyond the per-packet overhead (AETH, IBA 9.3.1: 4). */
  readonly ackHeaderBytes: number;
}

/** The seed's profile, to the byte: 44 = IPv4 20 + UDP 8 + BTH 12 + ICRC 4; 82 = 44 + 8 + 12 + 14 + 4. */
export const RDMA_ROCEV2: ProviderProfile = {
  name: 'rdma_rocev2',
  description: 'MXL FabricsBandwidth.md baseline: RoCEv2 over IPv4, no VLAN, media payload only',
  mtuOverheadBytes: 44,
  wireOverheadBytes: 82,
  l2HeaderBytes: 14,
  grainHeaderBytes: { video: 0, audio: 0, data: 0 },
  writeHeaderBytes: 0,
  immediateDataBytes: 0,
  txIovLimit: 0,
  acksPerMessage: 0,
  ackEveryPackets: 0,
  ackHeaderBytes: 0,
};

/**
 * What MXL 1.x fabrics over libfabric verbs really writes (src/model/transfer.ts has the write
 * lists): the whole grain region from its header (MXL_GRAIN_PAYLOAD_OFFSET = 8192,
 * lib/internal/include/mxl-internal/Flow.hpp; ofi/ProtocolEgressRMA.cpp:35-39) for video and
 * data; per audio batch a 16-byte AudioEntryHeader entry (ofi/AudioBounceBuffer.hpp:14-18) and one
 * entry per channel and ring fragment, split into writes of at most 4 entries (verbs' default
 * tx iov limit); RETH 16 on every write, ImmDt 4 on the write with immediate data (IBA vol 1,
 * 9.3.1; measured on rxe with tcpdump: 4,170 / 4,154 / 1,598-byte frames). One ACK (AETH 4) per
 * write from an RC responder; hardware NICs may coalesce (README, "The model").
 */
export const RDMA_ROCEV2_MXL_V1: ProviderProfile = {
  name: 'rdma_rocev2_mxl_v1',
  description: 'RoCEv2 as MXL 1.x fabrics sends it: grain header and RDMA WRITE-with-immediate headers counted',
  mtuOverheadBytes: 44,
  wireOverheadBytes: 82,
  l2HeaderBytes: 14,
  grainHeaderBytes: { video: 8192, audio: 16, data: 8192 },
  writeHeaderBytes: 16,
  immediateDataBytes: 4,
  txIovLimit: 4,
  acksPerMessage: 1,
  ackEveryPackets: 0,
  ackHeaderBytes: 4,
};

export const BUILTIN_PROFILES: readonly ProviderProfile[] = [RDMA_ROCEV2, RDMA_ROCEV2_MXL_V1];

/**
 * The profile used where none is named (calc, check, serve, a port, domain or flow without
 * `provider:`, a user profile without `base:`): what real MXL 1.x sends. The seed's rdma_rocev2
 * is low against it (-4.8 % for 1080p video) and is used only by name.
 * @alias the default is a choice with its own name, beside the profile it names
 */
export const DEFAULT_PROVIDER: ProviderProfile = RDMA_ROCEV2_MXL_V1;

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
    ['writeHeaderBytes', p.writeHeaderBytes],
    ['immediateDataBytes', p.immediateDataBytes],
    ['txIovLimit', p.txIovLimit],
    ['ackEveryPackets', p.ackEveryPackets],
    ['ackHeaderBytes', p.ackHeaderBytes],
    ['grainHeaderBytes.video', p.grainHeaderBytes.video],
    ['grainHeaderBytes.audio', p.grainHeaderBytes.audio],
    ['grainHeaderBytes.data', p.grainHeaderBytes.data],
  ];
  for (const [field, v] of fields) {
    const unit = field.endsWith('Bytes') || field.startsWith('grainHeaderBytes') ? 'a whole number of bytes' : 'a whole number';
    if (!nonNegativeInt(v)) problems.push(new ProfileError(`${field} must be ${unit}, got ${v}`, field));
  }
  if (!(Number.isFinite(p.acksPerMessage) && p.acksPerMessage >= 0 && p.acksPerMessage <= 1024)) {
    problems.push(new ProfileError(`acksPerMessage must be a number from 0 to 1024, got ${p.acksPerMessage}`, 'acksPerMessage'));
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
