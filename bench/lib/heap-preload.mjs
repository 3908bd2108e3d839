// Preloaded into the server in the soak (`node --expose-gc --import`): every 5 s, a full GC and then the heap in use,
// appended to BENCH_HEAP_FILE, so that growth of live objects can be told from a heap V8 has not collected yet.
import { appendFileSync } from 'node:fs';

const file = process.env.BENCH_HEAP_FILE;
const start = Date.now();
setInterval(() => {
  globalThis.gc?.();
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  const mb = (n) => +(n / 2 ** 20).toFixed(1);
  appendFileSync(file, `${JSON.stringify({ t: Math.round((Date.now() - start) / 1000), rssMb: mb(rss), heapUsedMb: mb(heapUsed), externalMb: mb(external), arrayBuffersMb: mb(arrayBuffers) })}\n`);
}, 5000).unref();
