#!/usr/bin/env node
// `npm run demo`: build, create and migrate the database, seed the two demo schools, declare the broker
// topology, start the server and the worker as two processes, make real tool calls through the hop for
// two schools' staff, print what crossed it and which audit rows it wrote, then stop both and exit.
import { spawn, spawnSync } from 'node:child_process';
import pg from 'pg';
import { readSection } from './with-env.mjs';

const serverEnv = { ...process.env, ...readSection('server') };
const workerEnv = { ...process.env, ...readSection('worker') };
const baseUrl = `http://127.0.0.1:${serverEnv.HTTP_PORT ?? 3000}`;
const children = [];

const say = (text = '') => console.log(text);
const step = (text) => say(`\n== ${text}`);

const runOrExit = (label, command, args, env) => {
  const result = spawnSync(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (result.status !== 0) {
    console.error(`${label} failed:\n${result.stdout}${result.stderr}`);
    process.exit(1);
  }
  return result.stdout.trim();
};

const stopAll = async () => {
  for (const child of children) {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    }
  }
};

const fail = async (message) => {
  console.error(message);
  await stopAll();
  process.exit(1);
};

const api = async (path, { token, body } = {}) => {
  const response = await fetch(`${baseUrl}${path}`, {
    method: body ? 'POST' : 'GET',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!response.ok) await fail(`${path} answered ${response.status}: ${await response.text()}`);
  return response.json();
};

step('build');
runOrExit('build', 'npx', ['nx', 'run-many', '-t', 'build', '--output-style=static'], { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' });
say('server and worker built');

step('database and broker');
say(runOrExit('db:setup', process.execPath, ['apps/server/dist/cli/db-setup.js'], serverEnv));
say(runOrExit('db:seed', process.execPath, ['apps/server/dist/cli/db-seed.js', '--reset'], serverEnv));
say(runOrExit('rmq:setup', process.execPath, ['apps/server/dist/cli/rmq-setup.js'], serverEnv));

step('start the server and the worker (two processes)');
const server = spawn(process.execPath, ['apps/server/dist/main.js'], { env: serverEnv, stdio: ['ignore', 'pipe', 'pipe'] });
children.push(server);
let serverLog = '';
server.stdout.on('data', (chunk) => (serverLog += chunk));
server.stderr.on('data', (chunk) => (serverLog += chunk));
for (let attempt = 0; ; attempt++) {
  if (server.exitCode !== null) await fail(`The server exited:\n${serverLog}`);
  if (await fetch(`${baseUrl}/ready`).then((response) => response.ok, () => false)) break;
  if (attempt > 200) await fail(`The server was not ready:\n${serverLog}`);
  await new Promise((resolve) => setTimeout(resolve, 100));
}
say(`server ready on ${baseUrl} (pid ${server.pid}): ${JSON.stringify(await api('/ready'))}`);

const login = async (email) => (await api('/auth/login', { body: { email, password: 'naalya-demo' } })).accessToken;
const peter = await login('campus.admin@greenhill.school');
const brian = await login('teacher@greenhill.school');
const grace = await login('admin@lakeside.school');
const greenhillAdmin = await login('admin@greenhill.school');
const campuses = Object.fromEntries(
  (await api('/departments', { token: greenhillAdmin })).map((department) => [department.campusName, department.campusId]),
);
const campusNames = Object.fromEntries(Object.entries(campuses).map(([name, id]) => [id, name]));
const sciences = (await api('/departments', { token: greenhillAdmin })).find((department) => department.name === 'Sciences');

const contexts = {
  peter: await api('/agent/context', { token: peter, body: { campusId: campuses.Kisasi } }),
  brian: await api('/agent/context', { token: brian, body: {} }),
  grace: await api('/agent/context', { token: grace, body: {} }),
};
const who = {
  peter: 'Peter Okello, campus administrator, Greenhill Academy, chat pinned to Kisasi',
  brian: 'Brian Mugisha, teacher, Greenhill Academy',
  grace: 'Grace Namusoke, school administrator, Lakeside College',
};
const plan = [
  { who: 'peter', tool: 'list_departments', args: {}, note: 'a read, narrowed to the pinned campus' },
  { who: 'peter', tool: 'create_department', args: { name: 'Robotics', campusId: campuses.Ntinda }, note: 'an allowed write; the model named Ntinda, the chat is pinned to Kisasi' },
  { who: 'brian', tool: 'create_department', args: { name: 'Drama' }, note: 'a denial: teachers may not create departments' },
  { who: 'grace', tool: 'delete_department', args: { departmentId: sciences.id }, note: "a cross-school attempt on Greenhill's Sciences department" },
];
const calls = plan.map((call, index) => ({ context: contexts[call.who], tool: call.tool, args: call.args, toolCallId: `demo-call-${index + 1}` }));

const worker = spawn(process.execPath, ['apps/worker/dist/cli/demo-calls.js'], { env: workerEnv, stdio: ['pipe', 'pipe', 'pipe'] });
children.push(worker);
say(`worker started (pid ${worker.pid}); it holds no database URL and no JWT secret`);
let workerOut = '';
let workerErr = '';
worker.stdout.on('data', (chunk) => (workerOut += chunk));
worker.stderr.on('data', (chunk) => (workerErr += chunk));
worker.stdin.end(JSON.stringify(calls));
const workerCode = await new Promise((resolve) => worker.once('exit', resolve));
if (workerCode !== 0) await fail(`The worker failed:\n${workerErr}`);

step('tool calls through the hop (worker -> RabbitMQ -> server -> RabbitMQ -> worker)');
const owner = new pg.Client({ connectionString: serverEnv.DATABASE_OWNER_URL });
await owner.connect();
const lines = workerOut.trim().split('\n').map((line) => JSON.parse(line));
for (const [index, line] of lines.entries()) {
  const call = plan[index];
  say(`\n[${index + 1}] ${who[call.who]}`);
  say(`    ${call.note}`);
  say(`    model called ${call.tool} ${JSON.stringify(call.args)}`);
  say(`    RabbitMQ event: ${line.event}    hop: ${line.hopMs.toFixed(1)} ms`);
  if ('error' in line.result) say(`    result: refused: ${line.result.error}`);
  else {
    const data = Array.isArray(line.result.data)
      ? line.result.data.map((row) => row.name ?? row.fullName).join(', ')
      : `department "${line.result.data.name}" (${line.result.data.id}) on the ${campusNames[line.result.data.campusId] ?? 'whole school'} campus`;
    say(`    result: ${data}`);
    say(`    scope: ${line.result.scopeContext}`);
  }
  if (line.streamed.length) say(`    streamed to the client: ${JSON.stringify(line.streamed)}`);
  const { rows } = await owner.query(
    `SELECT a.id, s.name AS school, u.full_name AS actor, a.action, a.resource_type, a.resource_id, a.source
       FROM audit_log a JOIN schools s ON s.id = a.school_id JOIN users u ON u.id = a.actor_id WHERE a.call_id = $1`,
    [line.callId],
  );
  if (rows.length === 0) say('    audit rows: none');
  for (const row of rows) say(`    audit row ${row.id}: ${row.actor} ${row.action} ${row.resource_type} ${row.resource_id} in ${row.school} (via ${row.source})`);
}
await owner.end();

step('stop both processes');
await stopAll();
say(`server stopped after draining (${server.exitCode ?? server.signalCode}), worker exited with ${worker.exitCode}`);
say('\nDemo finished. `npm start` runs both services; README.md explains the rest.');
process.exit(0);
