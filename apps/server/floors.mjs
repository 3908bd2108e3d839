#!/usr/bin/env node
// The server's floors (docs/architecture.md), read from import lines: core (plumbing) < domain (rules and REST)
// < agent seam (naalya-ai) < entry (app.module, app.entities, seed, main, cli). A file imports its own floor or the
// ones below it, never one above; test code (specs, testing/, fixtures/) may import anything and nothing in
// production imports it. One classification serves the lint rule (eslint.config.mjs) and this listing:
//   node apps/server/floors.mjs          every folder-to-folder import inside apps/server/src, with counts
//   node apps/server/floors.mjs --up     only the ones that run up (or into test code)
//   node apps/server/floors.mjs --check  the same, and exit 1 when there is any
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = join(dirname(fileURLToPath(import.meta.url)), 'src');
const LEVEL = { core: 0, domain: 1, seam: 2, entry: 3 };
const ENTRY_ROOMS = new Set(['seed']);

const isTest = (path) => /\.(spec|integration-spec|e2e-spec)\.ts$|\.test-d\.ts$/.test(path) || /(^|\/)(testing|fixtures)\//.test(path);

/** The floor and room of a file under apps/server/src, or null for a file outside it. */
export const placeOf = (file) => {
  const path = relative(SRC, file);
  if (path.startsWith('..')) return null;
  const [top, area, sub] = path.replace(/\.[mc]?[jt]s$/, '').split('/');
  if (isTest(path)) return { floor: 'test', room: top === 'app' ? `${area}` : top };
  if (top !== 'app') return { floor: 'entry', room: top };
  // app.module, app.entities: the files directly in app/ assemble the floors.
  if (sub === undefined || ENTRY_ROOMS.has(area)) return { floor: 'entry', room: area };
  if (area === 'core') return { floor: 'core', room: `core/${sub}` };
  if (area === 'naalya-ai') return { floor: 'seam', room: `naalya-ai/${sub}` };
  return { floor: 'domain', room: area };
};

/** Why importing `to` from `from` breaks the floors, or null when it does not. */
export const wrongWay = (from, to) => {
  if (!from || !to || from.floor === 'test') return null;
  if (to.floor === 'test') return `${from.room} (${from.floor}) imports test code (${to.room})`;
  if (LEVEL[to.floor] > LEVEL[from.floor]) return `${from.room} (${from.floor}) imports ${to.room} (${to.floor}), a floor above it`;
  return null;
};

const targetOf = (file, specifier) => (specifier.startsWith('.') ? resolve(dirname(file), specifier) : null);

/** The ESLint rule: `floors/no-upward-import`. */
export const floorsPlugin = {
  meta: { name: 'naalya-server-floors' },
  rules: {
    'no-upward-import': {
      meta: {
        type: 'problem',
        docs: { description: 'Imports run down the server floors: entry > naalya-ai > domain > core; production never imports tests.' },
        schema: [],
        messages: { wrongWay: '{{why}}. See docs/architecture.md: move the code down, or pass it in from above.' },
      },
      create(context) {
        const from = placeOf(context.filename);
        if (!from) return {};
        const check = (node) => {
          const specifier = node.source?.value;
          if (typeof specifier !== 'string') return;
          const target = targetOf(context.filename, specifier);
          const why = target && wrongWay(from, placeOf(target));
          if (why) context.report({ node: node.source, messageId: 'wrongWay', data: { why } });
        };
        return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
      },
    },
  },
};

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : /\.ts$/.test(name) ? [path] : [];
  });

const IMPORT = /^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'|import\('([^']+)'\)/gm;

/** Every folder-to-folder import inside apps/server/src: `{ from, to, lines, why }`, why set when it runs the wrong way. */
export const listImports = () => {
  const pairs = new Map();
  for (const file of walk(SRC)) {
    const from = placeOf(file);
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = targetOf(file, match[1] ?? match[2]);
      const to = target && placeOf(target);
      if (!to || to.room === from.room) continue;
      const key = `${from.room} -> ${to.room}`;
      const pair = pairs.get(key) ?? { from, to, lines: 0, why: wrongWay(from, to) };
      pair.lines += 1;
      pairs.set(key, pair);
    }
  }
  return [...pairs.values()].sort((a, b) => `${a.from.room} ${a.to.room}`.localeCompare(`${b.from.room} ${b.to.room}`));
};

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const all = listImports();
  const wrong = all.filter((pair) => pair.why);
  for (const pair of check || process.argv.includes('--up') ? wrong : all) {
    const mark = pair.why ? 'UP ' : '   ';
    console.log(`${mark} ${`${pair.from.room} -> ${pair.to.room}`.padEnd(56)} ${String(pair.lines).padStart(3)}  ${pair.from.floor} -> ${pair.to.floor}`);
  }
  const lines = (pairs) => pairs.reduce((sum, pair) => sum + pair.lines, 0);
  console.log(`${all.length} folder pairs, ${lines(all)} import lines; ${wrong.length} pairs (${lines(wrong)} lines) run the wrong way`);
  if (check && wrong.length > 0) process.exit(1);
}
