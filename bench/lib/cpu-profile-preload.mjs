// Preloaded into the server under profile (`node --import`): V8's CPU profiler (the one behind `node --cpu-prof`),
// windowed to the measurement. The first SIGUSR2 starts it, the second writes BENCH_CPU_PROFILE_FILE as a .cpuprofile.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const file = process.env.BENCH_CPU_PROFILE_FILE;
const session = new Session();
session.connect();
let running = false;
process.on('SIGUSR2', async () => {
  if (!running) {
    running = true;
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    return;
  }
  running = false;
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(file, JSON.stringify(profile));
  process.send?.('profile-written');
  writeFileSync(`${file}.done`, '');
});
