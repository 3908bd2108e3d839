#!/usr/bin/env node
// `npm run demo`: build, create and migrate the database, seed the two demo schools, declare the broker
// topology, start the server and the worker as two processes, then hold a short conversation for each of five
// people through the real API (REST and server-sent events), print every event of it and the audit rows it
// wrote, stop both processes and exit: 0 when everything worked, 1 with the reason when something did not.
import { spawn, spawnSync } from 'node:child_process';
import pg from 'pg';
import { ApiError, createClient, createRenderer, namesFromMap } from './agent-client.mjs';
import { processEnv } from './with-env.mjs';

// Variables set on the command line win over .env (or .env.example), as with-env.mjs has it: `AGENT_MODEL=openai:sim npm run demo`.
const serverEnv = processEnv('server');
const workerEnv = processEnv('worker');
// The setups also create the worker's checkpoint role and broker user, so they alone get the worker's credentials, as in `npm start`.
const setupEnv = processEnv('setup');
const modelInUse = `${workerEnv.AGENT_MODEL || 'scripted'}${workerEnv.AGENT_MODEL_BASE_URL ? ` at ${workerEnv.AGENT_MODEL_BASE_URL}` : ''}`;
const baseUrl = `http://127.0.0.1:${serverEnv.HTTP_PORT ?? 3000}`;
const PASSWORD = 'naalya-demo';
const children = [];
const started = Date.now();

const say = (text = '') => console.log(text);
const step = (text) => say(`\n== ${text}`);
const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

const stopAll = async () => {
  for (const { child } of children) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }
};

const fail = async (message) => {
  console.error(`\nDemo failed: ${message}`);
  for (const { name, output } of children) {
    if (output.text.trim()) console.error(`\n--- last output of the ${name} ---\n${output.text.trim().split('\n').slice(-25).join('\n')}`);
  }
  await stopAll();
  process.exit(1);
};

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => void fail(`stopped by ${signal}`));
// Whatever goes wrong still stops the processes the demo started.
process.on('uncaughtException', (error) => void fail(error.stack ?? String(error)));
process.on('unhandledRejection', (error) => void fail(error instanceof Error ? (error.stack ?? error.message) : String(error)));

const runOrExit = async (label, command, args, env) => {
  const result = spawnSync(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (result.status !== 0) await fail(`${label} failed (exit ${result.status ?? result.signal}):\n${result.stdout}${result.stderr}`);
  return result.stdout.trim();
};

/** Starts a built service as a child process and waits, printing a dot a second, until ready() says so. */
const startService = async (name, script, env, ready, timeoutMs = 90_000) => {
  const since = Date.now();
  const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = { text: '' };
  child.stdout.on('data', (chunk) => (output.text += chunk));
  child.stderr.on('data', (chunk) => (output.text += chunk));
  children.push({ name, child, output });
  process.stdout.write(`starting the ${name} (pid ${child.pid}) `);
  let lastDot = Date.now();
  while (!(await ready(output.text))) {
    if (child.exitCode !== null) {
      say('');
      await fail(`the ${name} exited with ${child.exitCode} while starting`);
    }
    if (Date.now() - since > timeoutMs) {
      say('');
      await fail(`the ${name} was not ready within ${timeoutMs / 1000} s`);
    }
    if (Date.now() - lastDot >= 1000) {
      process.stdout.write('.');
      lastDot = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  say(` ready in ${seconds(since)}`);
  return child;
};

// --- setup -----------------------------------------------------------------------------------------------

step('build');
process.stdout.write('building the contract libraries, the server and the worker (nx, cached after the first time) ... ');
const since = Date.now();
await runOrExit('build', 'npx', ['nx', 'run-many', '-t', 'build', '--output-style=static'], { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' });
say(`done in ${seconds(since)}`);

step('database and broker');
say(await runOrExit('db:setup', process.execPath, ['apps/server/dist/cli/db-setup.js'], setupEnv));
say(await runOrExit('db:seed', process.execPath, ['apps/server/dist/cli/db-seed.js', '--reset'], setupEnv));
say(await runOrExit('rmq:setup', process.execPath, ['apps/server/dist/cli/rmq-setup.js'], setupEnv));

step('start the server and the worker (two processes)');
if (await fetch(`${baseUrl}/ready`).then(() => true, () => false)) await fail(`something already listens on ${baseUrl}; stop it (npm start?) and run the demo again`);
await startService('server', 'apps/server/dist/main.js', serverEnv, () => fetch(`${baseUrl}/ready`).then((response) => response.ok, () => false));
// LOG_LEVEL=log at least, so the worker prints the line that says it consumes the runs queue.
await startService('worker', 'apps/worker/dist/main.js', { ...workerEnv, LOG_LEVEL: workerEnv.LOG_LEVEL === 'debug' ? 'debug' : 'log' }, (text) =>
  text.includes('Worker ready'),
);
say(`the server listens on ${baseUrl}; the worker holds no database URL of the server's and no JWT secret (model: ${modelInUse})`);

// --- conversations ---------------------------------------------------------------------------------------

// The demo reads what the conversations wrote as the owner, past row-level security: a setup credential, as db:seed's.
const owner = new pg.Client({ connectionString: setupEnv.DATABASE_OWNER_URL });
await owner.connect().catch((error) => fail(`cannot reach PostgreSQL as the owner: ${error.message}`));
const { rows: greenhillSciences } = await owner.query(
  `SELECT d.id FROM departments d JOIN schools s ON s.id = d.school_id WHERE s.name = 'Greenhill Academy' AND d.name = 'Sciences'`,
);
if (greenhillSciences.length !== 1) await fail('the seed has no Sciences department at Greenhill');
const conversationsStart = new Date();

const personas = [
  {
    email: 'class.teacher@greenhill.school',
    who: 'Angela Achieng, class teacher of S1 Kisasi (Greenhill Academy)',
    turns: [{ message: 'list my classes' }, { message: 'take the register for S1 Kisasi, everyone present except Ivan' }],
  },
  {
    email: 'subject.teacher@greenhill.school',
    who: 'Benjamin Ssali, Mathematics teacher (Greenhill Academy)',
    turns: [{ message: 'show the gradebook for S1 Kisasi' }, { message: 'write a lesson plan on quadratic equations for next week', answers: ['Mathematics in S1 Kisasi'] }],
  },
  {
    email: 'dos@greenhill.school',
    who: 'Samuel Kato, director of studies who also teaches Physics (Greenhill Academy)',
    turns: [
      { message: 'lesson plans waiting for review' },
      { message: 'approve the lesson plan Linear equations', answers: ['yes'] },
      // Approve with an edit: Sarah asks again about the edited call, and only that one runs.
      { message: 'approve the lesson plan Simultaneous equations', answers: [{ answer: 'yes', edits: { comment: 'Add a homework task' } }, 'yes'] },
    ],
  },
  {
    email: 'admin@greenhill.school',
    who: 'Grace Namusoke, school administrator (Greenhill Academy)',
    turns: [
      { message: 'show the school branding' },
      { message: 'create a department called Robotics' },
      { message: 'delete the Robotics department', answers: ['yes'] },
    ],
  },
  {
    email: 'admin@lakeside.school',
    who: "Lakeside College's administrator, reaching for a Greenhill department by its id",
    // Refused at the preview, as the delete itself would be: nothing is asked.
    turns: [{ message: 'list departments' }, { message: `delete department ${greenhillSciences[0].id}` }],
  },
];

const hold = async (persona) => {
  const client = createClient(baseUrl);
  await client.login(persona.email, PASSWORD);
  const map = await client.map();
  const names = namesFromMap(map);
  const render = createRenderer({ names, indent: '    ' });
  const thread = await client.createThread(`demo: ${persona.email}`);
  say(`\n-- ${persona.who}`);
  say(`   logged in as ${persona.email}; thread ${thread.id}; works with ${map.roster.map((entry) => entry.name).join(', ')}`);
  for (const turn of persona.turns) {
    say(`\n  you: ${turn.message}`);
    const { runId } = await client.startRun(thread.id, turn.message);
    const answers = [...(turn.answers ?? [])];
    let afterSeq = 0;
    for (;;) {
      // Text streams as it comes: written as is, lines end as the messages do.
      const { lastSeq, finish } = await client.stream(thread.id, runId, afterSeq, (event) => {
        process.stdout.write(render(event));
      });
      afterSeq = lastSeq;
      if (finish.type === 'RUN_ERROR') throw new ApiError(`run ${runId} failed: ${finish.message}`);
      if (finish.outcome.type !== 'interrupt') break;
      for (const interrupt of finish.outcome.interrupts) {
        const next = answers.shift();
        if (next === undefined) throw new ApiError(`an unexpected question: ${interrupt.message}`);
        const { answer, edits } = typeof next === 'string' ? { answer: next } : next;
        const askedBy = interrupt.metadata.askedBy;
        const changed = edits ? `, after changing ${Object.entries(edits).map(([field, value]) => `${field} to ${JSON.stringify(value)}`).join(', ')}` : '';
        say(`  you (answering ${names[askedBy] ?? askedBy}): ${answer}${changed}`);
        await client.resume(thread.id, interrupt.id, answer, edits);
      }
    }
    if (answers.length > 0) throw new ApiError(`the scripted answer "${answers[0]}" was never asked for`);
  }
};

step('conversations: each person logs in, opens a thread, posts messages and reads the run events (SSE)');
for (const persona of personas) {
  try {
    await hold(persona);
  } catch (error) {
    await fail(`the conversation of ${persona.email}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

step('audit rows written during the conversations (read as the database owner)');
const { rows: audit } = await owner.query(
  `SELECT a.id, s.name AS school, u.full_name AS actor, a.action, a.resource_type, a.resource_id, a.source
     FROM audit_log a JOIN schools s ON s.id = a.school_id JOIN users u ON u.id = a.actor_id
    WHERE a.created_at >= $1 ORDER BY a.created_at`,
  [conversationsStart],
);
await owner.end();
if (audit.length === 0) await fail('the conversations wrote no audit row');
for (const row of audit) say(`  ${row.id}  ${row.actor} ${row.action} ${row.resource_type} ${row.resource_id ?? ''} in ${row.school} (via ${row.source})`);

step('stop both processes');
await stopAll();
say(children.map(({ name, child }) => `${name} exited (${child.exitCode ?? child.signalCode})`).join(', '));
say(`\nDemo finished in ${seconds(started)} with the model ${modelInUse}. \`npm start\` runs both services, \`npm run chat -- --user <email>\` talks to Rover; README.md explains the rest.`);
process.exit(0);
