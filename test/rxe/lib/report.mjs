// The report every rxe check script keeps: checks with their numbers, each logged as it is made,
// written to OUT/report.json at the end; the host-side scripts also write OUT/host-done, the
// marker the guest waits for before it ends, and follow a phased guest (guest-lib.sh rxe_mark,
// rxe_wait_ack) through its phase-NAME and their ack-NAME.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export function scenarioReport(out, tag) {
  const report = { checks: [], numbers: {} };
  const log = (m) => console.error(`${tag}: ${m}`);
  /** Records one check; returns `ok`. */
  function check(ok, what, numbers) {
    report.checks.push({ ok, what, ...(numbers ? { numbers } : {}) });
    log(`${ok ? 'ok  ' : 'FAIL'} ${what}${numbers ? ` ${JSON.stringify(numbers)}` : ''}`);
    return ok;
  }
  /** report.json, with `error` when the script could not finish its checks. */
  function write(error) {
    writeFileSync(join(out, 'report.json'), `${JSON.stringify(error === undefined ? report : { ...report, error }, null, 2)}\n`);
  }
  /** Waits for the guest's phase-NAME; returns when it was seen (ms). Throws once the guest ended or after `timeoutMs`. */
  async function phase(name, timeoutMs = 600_000) {
    const path = join(out, `phase-${name}`);
    const from = Date.now();
    while (!existsSync(path)) {
      if (existsSync(join(out, 'guest-ended'))) throw new Error(`the guest ended before phase ${name} (see ${out})`);
      if (Date.now() - from > timeoutMs) throw new Error(`timed out waiting for phase ${name}`);
      await sleep(250);
    }
    log(`phase ${name}`);
    return Date.now();
  }
  /** ack-PHASE: the guest's phase is checked, it may go on (guest-lib.sh rxe_wait_ack). */
  const ack = (phase) => writeFileSync(join(out, `ack-${phase}`), '');
  /** host-done (the guest may end now), then report.json. */
  function writeHostDone(error) {
    writeFileSync(join(out, 'host-done'), '');
    write(error);
  }
  /** Logs the tally and exits 1 if any check failed. */
  function exit() {
    const failed = report.checks.filter((c) => !c.ok);
    log(`${report.checks.length - failed.length} passed, ${failed.length} failed`);
    process.exit(failed.length ? 1 : 0);
  }
  return { report, log, check, write, phase, ack, writeHostDone, exit };
}
