// When a run on this shared machine is too noisy to judge. Two measures, both recorded with every run:
// - the 1-minute load average when the run started, before its own set-up: what else was running;
// - per phase, the share of the machine's cores that processes other than the measured ones (the caller, the variant's
//   server, the broker, the database backends of the bench's database) used while it ran, from /proc/stat.
// The targets are set for a quiet machine (issue 25: load 0.08 before the reference run): a run above either limit
// still reports its figures, marked as too noisy to judge, and is not evidence that a target is met or missed.
import { cpus, loadavg } from 'node:os';
import { machineBusyMicros } from './proc.mjs';

/** A machine is quiet when the 1-minute load average is at most this when the run starts. */
export const MAX_QUIET_LOAD = 0.5;
/** A phase is quiet when the others used at most this share of all cores during it. */
export const MAX_FOREIGN_SHARE = 0.1;

export const CORES = cpus().length;

export const loadNow = () => loadavg()[0];

/** Machine busy µs now, to take a phase's or a slice's delta with `foreignShare`. */
export const machineBusy = machineBusyMicros;

/** The share of all cores used by other processes: the machine's busy time less the measured processes' CPU. */
export const foreignShare = (machineBusyUs, measuredUs, seconds) => Math.max(0, machineBusyUs - measuredUs) / (seconds * 1e6 * CORES);

/**
 * The verdict line of a run: `phases` are `{ label, foreignShare }`. Says which limit a noisy run broke, so that the
 * figures are not compared with a quiet run's.
 */
export const noiseVerdict = (loadBefore, phases) => {
  const noisy = phases.filter((phase) => phase.foreignShare > MAX_FOREIGN_SHARE);
  const worst = Math.max(0, ...phases.map((phase) => phase.foreignShare));
  const reasons = [];
  if (loadBefore > MAX_QUIET_LOAD) reasons.push(`the load average was ${loadBefore.toFixed(2)} when it started (quiet: ≤ ${MAX_QUIET_LOAD})`);
  if (noisy.length) {
    reasons.push(
      `other processes used more than ${100 * MAX_FOREIGN_SHARE} % of the ${CORES} cores during ${noisy.length} of ${phases.length} phases (up to ${(100 * worst).toFixed(0)} %: ${noisy.slice(0, 6).map((phase) => phase.label).join(', ')}${noisy.length > 6 ? ', …' : ''})`,
    );
  }
  const noisyRun = reasons.length > 0;
  return {
    noisy: noisyRun,
    loadBefore,
    worstForeignShare: worst,
    text: noisyRun
      ? `**Too noisy to judge**: ${reasons.join('; ')}. The figures are recorded, but neither meet nor miss a target: rerun on a quiet machine.`
      : `Quiet: load average ${loadBefore.toFixed(2)} at the start, other processes at most ${(100 * worst).toFixed(0)} % of the ${CORES} cores in any phase.`,
  };
};
