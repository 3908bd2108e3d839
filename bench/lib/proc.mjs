// CPU and memory of processes from /proc: utime+stime of /proc/<pid>/stat (clock ticks), VmRSS of /proc/<pid>/status.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

/** CPU time used so far by a process (all threads), in µs; 0 when it is gone. */
export const cpuMicros = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_US;
  } catch {
    return 0;
  }
};

export const rssBytes = (pid) => {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
};

/** The RabbitMQ node's Erlang VM. */
export const brokerPid = () => {
  try {
    return Number(execFileSync('pgrep', ['-o', 'beam.smp'], { encoding: 'utf8' }).trim().split('\n')[0]) || undefined;
  } catch {
    return undefined;
  }
};

/** The client is this process: process.cpuUsage() has µs resolution. */
export const selfCpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** CPU time the whole machine spent busy so far (every core; idle and iowait excluded), in µs: /proc/stat's first line. */
export const machineBusyMicros = () => {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = ticks.map(Number);
  return (user + nice + system + irq + softirq + steal) * TICK_US;
};
