// Imported by the bench's servers: answers the bench's 'cpu' message with this process's CPU time in µs
// (process.cpuUsage, exact, where /proc's clock ticks are 10 ms: too coarse for a slice of a few thousand echo calls).
process.on('message', (message) => {
  if (message !== 'cpu') return;
  const { user, system } = process.cpuUsage();
  process.send?.({ cpu: user + system });
});
