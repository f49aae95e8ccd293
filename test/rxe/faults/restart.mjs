// What an exporter restart may not invent (issue 32, exporter-restarted): after the restart, no
// rate or packets per grain above what the same series showed before it. A rate made from counters
// read on both sides of the gap, or from a window that still holds the gap, would be many times the
// real one. `spikes` is pure; `restartSpikes` reads the maxima from Prometheus.

/** The series the check compares, by family. */
export const RESTART_FAMILIES = [
  'mxl_fabric_port_measured_bytes_per_second',
  'mxl_fabric_port_measured_packets_per_second',
  'mxl_fabric_flow_measured_packets_per_second',
  'mxl_fabric_flow_connection_packets_per_grain',
];
/** After over before: more is a spike. The rates are taken over the exporter's 20 s window, so a real change is smooth. */
export const SPIKE_RATIO = 1.5;

const keyOf = (labels) => Object.entries(labels).filter(([k]) => k !== '__name__').sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}="${v}"`).join(',');

/**
 * The series whose maximum after the restart exceeds `ratio` times its maximum before it
 * (series only one side has are not compared: a connection's identity changes with a restart).
 * @param {{ labels: Record<string, string>, value: number }[]} before
 * @param {{ labels: Record<string, string>, value: number }[]} after
 */
export function spikes(before, after, ratio = SPIKE_RATIO) {
  const was = new Map(before.map((s) => [`${s.labels.__name__}{${keyOf(s.labels)}}`, s.value]));
  const out = [];
  for (const s of after) {
    const series = `${s.labels.__name__}{${keyOf(s.labels)}}`;
    const b = was.get(series);
    if (b !== undefined && s.value > b * ratio && s.value > 0) out.push({ series, before: b, after: s.value });
  }
  return out;
}

/**
 * The maxima of RESTART_FAMILIES on `instance` over the minute before `restartAt` and from
 * `readyAt` to `until` (ms), compared.
 */
export async function restartSpikes(prom, { instance, restartAt, readyAt, until }) {
  // max_over_time drops the name: each family's series get theirs back.
  const maxima = async (end, seconds) => {
    const out = [];
    for (const f of RESTART_FAMILIES) {
      for (const s of await prom.query(`max_over_time(${f}{instance="${instance}"}[${seconds}s] @ ${(end / 1000).toFixed(3)})`)) {
        out.push({ labels: { ...s.labels, __name__: f }, value: s.value });
      }
    }
    return out;
  };
  const before = await maxima(restartAt, 60);
  const after = await maxima(until, Math.max(1, Math.floor((until - readyAt) / 1000)));
  return { compared: after.length, spikes: spikes(before, after) };
}
