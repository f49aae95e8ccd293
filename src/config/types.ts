import type { Mtu, ProviderProfile, ProfileRegistry, Rational, TransferOptions } from '../model/index.js';
import type { FlowDefinition } from '../flows/definition.js';
import { type Direction, portKey } from '../sources/types.js';

export interface SamplingConfig {
  readonly intervalMs: number;
  readonly windowMs: number;
}

export interface PortConfig {
  readonly device: string;
  readonly port: number;
  readonly provider: ProviderProfile;
  /** `auto`: the port's active IB MTU as the device reports it. */
  readonly mtu: Mtu | 'auto';
  /** Link capacity in bits per second; `auto`: the port's rate. */
  readonly capacityBitsPerSecond: number | 'auto';
  /** Fraction of capacity the predicted wire rate may use (check, utilisation alerts). */
  readonly headroom: number;
  /** Declared in `ports:`, or implied by a flow binding. */
  readonly declared: boolean;
}

/**
 * Whether a flow must be on the wire: `always` (missing is an alert), `when_live` (counted only
 * while an MXL domain shows it live), `never` (documented only: never counted in port predictions).
 */
export const EXPECTS = ['always', 'when_live', 'never'] as const;
export type Expect = (typeof EXPECTS)[number];

export interface FlowBinding {
  readonly flow: FlowDefinition;
  readonly device: string;
  readonly port: number;
  readonly direction: Direction;
  readonly provider: ProviderProfile;
  readonly grainDuration: Rational;
  readonly origin: 'config' | 'domain';
  /** What the flow's header says about its writes (ring length); absent: the model's defaults. */
  readonly transfer?: TransferOptions;
  /** A configured flow's own `expect:`, or the expectation of the domain a flow was found in; resolved in predictions/expected.ts. */
  readonly expect: Expect | undefined;
}

/** An MXL domain to discover flows in; its flows are bound like `flows:` entries. */
export interface DomainConfig {
  readonly path: string;
  readonly device: string;
  readonly port: number;
  readonly direction: Direction;
  /** Glob patterns (`*`, `?`) matched against a flow's label, id and group hints; empty = all. */
  readonly include: readonly string[];
  readonly exclude: readonly string[];
  readonly provider: ProviderProfile;
  readonly grainDuration: Rational;
  /** Expectation for the flows found here (and configured flows this domain covers). */
  readonly expect: Expect | undefined;
}

export interface Config {
  readonly file: string;
  readonly sampling: SamplingConfig;
  readonly driftTolerance: number;
  readonly providers: ProfileRegistry;
  readonly ports: readonly PortConfig[];
  readonly flows: readonly FlowBinding[];
  readonly domains: readonly DomainConfig[];
}

export { portKey };

/** One flow bound to one port and direction: a config may hold each at most once. */
export const bindingKey = (b: FlowBinding): string => `${b.flow.id} ${portKey(b)} ${b.direction}`;
