/**
 * One metric family of the exporter's own (docs/metrics.md): its name (without the
 * `mxl_fabric_` prefix, written out in full so that `grep -rn port_stat_total src/` finds it),
 * help, type, when its samples can change, and how to read them from the exporter's state.
 */
import type { Labels, Sample } from './exposition.js';
import type { ExporterState, FlowMeasurementView, PortView } from './view.js';

export const PREFIX = 'mxl_fabric_';

/**
 * The samples of a family for some ports (formatText() asks port by port) or, for a family that
 * is not per port (the exporter's own, MXL domains' flows), for none: those answer from `state`
 * and `flows` whatever `views` holds.
 */
export type Read = (views: readonly PortView[], state: ExporterState, flows: readonly FlowMeasurementView[]) => Sample[];

/** `plan`: reads only the plans and the config; `tick`: also what the sampler and domains saw. */
export type Changes = 'plan' | 'tick';

/** What docs/metrics.md lists of a family (scripts/metrics-doc.mjs writes it from these). */
export interface FamilyDoc {
  readonly name: string;
  readonly help: string;
  readonly type: 'gauge' | 'counter';
  /**
   * The label names of its series, in the order they are printed. A series may leave some out
   * (flow_drift_ratio's grains series carry no device, port or direction), never add one.
   */
  readonly labels: readonly string[];
}

export interface Family extends FamilyDoc {
  readonly changes: Changes;
  readonly read: Read;
}

/** The labels every per-port series starts with. */
export const portLabels = (v: PortView): Labels => ({ device: v.device, port: String(v.port) });
