import type { Layer, Mtu, ProviderProfile, ProfileRegistry, Rational, TransferOptions } from '../model/index.js';
import type { FlowDefinition } from '../flows/definition.js';
import type { Problem } from '../input/problems.js';
import { type Direction, portKey } from '../ports.js';
import { key } from '../keys.js';

interface SamplingConfig {
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
  /** `peer:` the target's `address:port`: the connection to or from it carries this flow (docs/connections.md). */
  readonly peer?: string;
}

interface DomainBase {
  readonly path: string;
  /** Glob patterns (`*`, `?`) matched against a flow's label, id and group hints; empty = all. */
  readonly include: readonly string[];
  readonly exclude: readonly string[];
  readonly provider: ProviderProfile;
  readonly grainDuration: Rational;
  /** Expectation for the flows found here (and configured flows this domain covers). */
  readonly expect: Expect | undefined;
  /** `peer:` for every flow found here (FlowBinding.peer). */
  readonly peer?: string;
}

/** An MXL domain to discover flows in; its flows are bound like `flows:` entries. */
export interface BoundDomainConfig extends DomainBase {
  readonly bind?: undefined;
  readonly device: string;
  readonly port: number;
  readonly direction: Direction;
}

/**
 * `bind: auto`: each flow found is bound to the port and direction of the RDMA connection that
 * carries it (docs/connections.md), and moves with it; a device, port or direction given only
 * narrows which connections may bind it.
 */
interface AutoDomainConfig extends DomainBase {
  readonly bind: 'auto';
  readonly device?: string;
  readonly port?: number;
  readonly direction?: Direction;
}

export type DomainConfig = BoundDomainConfig | AutoDomainConfig;

/** Where a connection puts a flow of a `bind: auto` domain. */
export interface Placement {
  readonly device: string;
  readonly port: number;
  readonly direction: Direction;
}

/** RDMA connections from the kernel's restrack tables (docs/connections.md). */
interface ConnectionsConfig {
  readonly enabled: boolean;
  /** Between reads of every device's QP and cm_id dumps; default: the sampling interval. */
  readonly intervalMs: number;
  /**
   * QPs a device whose driver pays a firmware command per QP (mlx5) is asked for per second: a
   * device with more QPs is read further apart (sources/restrack/pacing.ts).
   */
  readonly qpQueriesPerSecond: number;
}

/**
 * What the connection series stand for (docs/configuration.md, "Series budget"): one per QP, one
 * per flow's connections (connections carrying no flow: per process), or one per process.
 */
export type ConnectionSeries = 'qp' | 'flow' | 'process';
export const CONNECTION_SERIES: readonly ConnectionSeries[] = ['qp', 'flow', 'process'];

/** What the exposition keeps (docs/configuration.md, "Series budget"). */
export interface MetricsConfig {
  /** Layers of flow_predicted_bytes_per_second exported, in LAYERS order; may be empty. */
  readonly flowLayers: readonly Layer[];
  readonly connectionSeries: ConnectionSeries;
}

export interface Config {
  readonly file: string;
  /** The top-level `headroom:` (ports found by a connection only get it). */
  readonly headroom?: number;
  readonly sampling: SamplingConfig;
  readonly connections: ConnectionsConfig;
  readonly driftTolerance: number;
  readonly metrics: MetricsConfig;
  readonly providers: ProfileRegistry;
  readonly ports: readonly PortConfig[];
  readonly flows: readonly FlowBinding[];
  readonly domains: readonly DomainConfig[];
  /** What is doubtful but not refused (a device that is a near miss of a listed one), with its place. */
  readonly warnings?: readonly Problem[];
}

export { portKey };

/** One flow bound to one port and direction: a config may hold each at most once. */
// The flow id last: the one part that may hold a '/' (keys.ts).
export const bindingKey = (b: FlowBinding): string => key(b.device, b.port, b.direction, b.flow.id);
