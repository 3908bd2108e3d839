// Self time of a .cpuprofile, grouped by package (node_modules/<pkg>, the project's apps and libs, node internals).
import { readFileSync } from 'node:fs';

const packageOf = (url) => {
  if (!url) return null;
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + 'node_modules/'.length).split('/');
    const name = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
    return name;
  }
  const app = /\/(apps|libs)\/([^/]+)\//.exec(url);
  if (app) return `${app[1] === 'apps' ? 'apps/' : '@naalya/'}${app[2]}`;
  if (url.startsWith('node:')) return 'node (internals)';
  // The bench's own scripts by their place in the repository, never the checkout's path on this machine.
  const bench = url.lastIndexOf('/bench/');
  return bench >= 0 ? url.slice(bench + 1) : url;
};

export const summariseProfile = (file, top = 15) => {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + delta);
  }
  const packages = new Map();
  const functions = new Map();
  let busy = 0;
  let idle = 0;
  for (const [id, us] of selfUs) {
    const { callFrame } = byId.get(id);
    const special = callFrame.url === '' ? callFrame.functionName : null;
    if (special === '(idle)') {
      idle += us;
      continue;
    }
    busy += us;
    const pkg = special ? (special === '(garbage collector)' ? '(garbage collector)' : special === '(program)' ? '(program: V8 / native)' : 'node (native)') : packageOf(callFrame.url);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
    const fn = `${callFrame.functionName || '(anonymous)'} ${pkg}${callFrame.url ? `:${callFrame.lineNumber + 1}` : ''}`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
  }
  const rank = (map) =>
    [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, us]) => ({ name, ms: +(us / 1000).toFixed(1), pct: +((100 * us) / busy).toFixed(1) }));
  return { busyMs: +(busy / 1000).toFixed(0), idleMs: +(idle / 1000).toFixed(0), packages: rank(packages), functions: rank(functions) };
};

export const profileMarkdown = (label, summary, calls) => {
  const lines = [`### ${label}`, '', `busy ${summary.busyMs} ms, idle ${summary.idleMs} ms${calls ? `, ${calls} calls, ${((summary.busyMs * 1000) / calls).toFixed(0)} µs busy per call` : ''}`, '', '| package (self time) | ms | % of busy |', '|---|---|---|'];
  for (const row of summary.packages) lines.push(`| ${row.name} | ${row.ms} | ${row.pct} |`);
  lines.push('', '| function (self time) | ms | % |', '|---|---|---|');
  for (const row of summary.functions) lines.push(`| \`${row.name.replace(/\|/g, '\\|')}\` | ${row.ms} | ${row.pct} |`);
  return lines.join('\n');
};
