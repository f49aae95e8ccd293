/**
 * Runs the exporter's Daemon (built dist/) in this process, exactly as `serve` starts it, and
 * measures it from inside: event-loop delay (perf_hooks.monitorEventLoopDelay, 10 ms resolution
 * like prom-client's nodejs_eventloop_lag_*), CPU (process.cpuUsage), memory, and the duration of
 * every sampling tick and every /metrics render. Nothing in src/ is changed: the two timers wrap
 * Sampler.prototype.tick and Metrics.prototype.render from the outside.
 *
 * Started by bench/run.mjs with child_process.fork():
 *   node bench/lib/daemon-harness.mjs CONFIG SYSFS_TREE
 * It listens on 127.0.0.1 (a free port), sends {type: 'ready', port, startMs}, then answers
 * {cmd: 'reset'} (start a measurement window) and {cmd: 'report'} (send the window's numbers).
 * {cmd: 'reset', eld: false} starts a window without the event-loop delay monitor: its 10 ms
 * timer wakes the process 100 times a second, a cost of the measurement, not of the exporter
 * (the steady-cost case's CPU windows; its delay is measured in a window of its own).
 * {cmd: 'reload'} reloads the config and reports how long it took and the longest event-loop stall.
 * {cmd: 'profile-start'} and {cmd: 'profile-stop', file} take a V8 CPU profile of just that window
 * (the same profiler `node --cpu-prof` drives, without the start-up and config load in it).
 */
import * as fs from 'node:fs';
import { Session } from 'node:inspector';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Daemon } from '../../dist/exporter/daemon.js';
import { Metrics } from '../../dist/exporter/metrics.js';
import { Sampler } from '../../dist/sampler/sampler.js';
import { createLogger } from '../../dist/log.js';
import { percentile } from './stats.mjs';
import { traceSlices, watchStalls } from './slices.mjs';

const [configFile, sysfsRoot] = process.argv.slice(2);

const tickMs = [];
const renderMs = [];
const timed = (proto, name, into) => {
  const original = proto[name];
  proto[name] = function (...args) {
    const t = process.hrtime.bigint();
    const r = original.apply(this, args);
    if (r instanceof Promise) return r.finally(() => into.push(Number(process.hrtime.bigint() - t) / 1e6));
    into.push(Number(process.hrtime.bigint() - t) / 1e6);
    return r;
  };
};
timed(Sampler.prototype, 'tick', tickMs);
timed(Metrics.prototype, 'render', renderMs);

const log = createLogger('warn', 'logfmt');
const daemon = new Daemon({ configFile, listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', sysfsRoot, log, ...(await restrackPeer()) });
const t0 = process.hrtime.bigint();
await daemon.start();
const startMs = Number(process.hrtime.bigint() - t0) / 1e6;

// monitorEventLoopDelay records the time between its timer's callbacks, which is the resolution
// plus the delay: an idle loop reads about 10 ms. The report subtracts the resolution.
const RESOLUTION_MS = 10;
const eld = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
eld.enable();
let cpu0 = process.cpuUsage();
/** On request ({cmd: 'reset', trace: true}): its 1 ms timer costs CPU the other windows must not pay. */
let slices;
let wall0 = process.hrtime.bigint();

const ms = (ns) => ns / 1e6;
const delayMs = (ns) => Math.max(0, ns / 1e6 - RESOLUTION_MS);
const summary = (xs) => ({ count: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), max: xs.length ? Math.max(...xs) : undefined });

let session;
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (err, r) => (err ? reject(err) : resolve(r))));

/**
 * With BENCH_RESTRACK_DIR (the connections case): the daemon's restrack socket is one end of a
 * socketpair whose other end is bench/restrack-peer.c (BENCH_RESTRACK_PEER) answering with the
 * generated dumps of that directory, datagram by datagram as the kernel sends them.
 */
async function restrackPeer() {
  const dir = process.env.BENCH_RESTRACK_DIR;
  if (!dir) return {};
  const { loadKoffi, loadLibc } = await import('../../dist/ffi/libc.js');
  const { NetlinkSocket } = await import('../../dist/sources/netlink/socket.js');
  const { spawn } = await import('node:child_process');
  const socketpair = loadKoffi().load('libc.so.6').func('int socketpair(int domain, int type, int protocol, _Out_ int *sv)');
  const AF_UNIX = 1;
  const SOCK_DGRAM = 2;
  const SOCK_CLOEXEC = 0o2000000;
  return {
    restrack: () => {
      const sv = [0, 0];
      if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) !== 0) throw new Error('socketpair failed');
      // The child gets its end as fd 3 (dup2 clears CLOEXEC there); this process keeps only its own.
      const peer = spawn(process.env.BENCH_RESTRACK_PEER, ['serve', '3', dir], { stdio: ['ignore', 'ignore', 'inherit', sv[1]] });
      peer.unref();
      loadLibc().close(sv[1]);
      process.once('exit', () => peer.kill());
      return { ok: true, transport: NetlinkSocket.adopt(sv[0], 1) };
    },
  };
}

process.on('message', async (msg) => {
  if (msg.cmd === 'profile-start') {
    session = new Session();
    session.connect();
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: 200 });
    await post('Profiler.start');
    process.send({ type: 'profiling' });
  } else if (msg.cmd === 'profile-stop') {
    const { profile } = await post('Profiler.stop');
    session.disconnect();
    fs.writeFileSync(msg.file, JSON.stringify(profile));
    process.send({ type: 'profile', file: msg.file });
  } else if (msg.cmd === 'reset') {
    if (msg.eld === false) eld.disable();
    else eld.enable();
    eld.reset();
    slices?.stop();
    slices = msg.trace ? traceSlices() : undefined;
    tickMs.length = 0;
    renderMs.length = 0;
    cpu0 = process.cpuUsage();
    wall0 = process.hrtime.bigint();
    process.send({ type: 'reset' });
  } else if (msg.cmd === 'report') {
    const cpu = process.cpuUsage(cpu0);
    const mem = process.memoryUsage();
    process.send({
      type: 'report',
      wallMs: Number(process.hrtime.bigint() - wall0) / 1e6,
      cpuMs: (cpu.user + cpu.system) / 1000,
      eventLoopDelayMs: {
        resolutionMs: RESOLUTION_MS, samples: eld.count, p50: delayMs(eld.percentile(50)), p99: delayMs(eld.percentile(99)), max: delayMs(eld.max),
      },
      tickMs: summary(tickMs),
      renderMs: summary(renderMs),
      slices: slices?.stop(),
      memory: { rss: mem.rss, heapUsed: mem.heapUsed, heapTotal: mem.heapTotal, external: mem.external },
      sampledPorts: daemon.state().sampler?.ports.size ?? 0,
      flows: daemon.state().config.flows.length,
    });
  } else if (msg.cmd === 'reload') {
    // A reload of the running daemon, and the longest the event loop went without a turn meanwhile.
    const stalls = watchStalls();
    const tracer = traceSlices();
    const t = performance.now();
    const r = await daemon.reload();
    const ms = performance.now() - t;
    // Until the new exposition is formatted and gzipped and the load's garbage collected (the
    // daemon does that right after a reload answers): its stalls count as the reload's.
    await daemon.warmed?.();
    const warmedMs = performance.now() - t;
    const maxStallMs = await stalls.stop();
    process.send({ type: 'reload', ms, warmedMs, maxStallMs, slices: tracer.stop(), ok: r.ok, flows: daemon.state().config.flows.length });
  } else if (msg.cmd === 'stop') {
    void daemon.stop().then(() => process.exit(0));
  }
});

process.send({ type: 'ready', port: daemon.address().port, startMs });
