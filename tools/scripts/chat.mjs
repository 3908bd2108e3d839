#!/usr/bin/env node
// `npm run chat -- --user <email>`: talk to Rover from a terminal, against a running server (`npm start`).
// Logs in, opens a thread, and for each line you type posts a run and prints its events as they stream:
// assistant text under the speaker's name, tool calls with their RabbitMQ event and hop time, the scope of each
// result, audit ids. A question from an assistant (ask_user) is asked here and answered through resume.
// Options: --user <email>, --password <password> (else a prompt; Enter for the demo password), --url <server>.
// Type /quit (or Ctrl-D) to leave.
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ApiError, createClient, createRenderer, namesFromMap } from './agent-client.mjs';
import { readSection } from './with-env.mjs';

const DEMO_PASSWORD = 'naalya-demo';

const { values: options } = parseArgs({
  options: { user: { type: 'string' }, password: { type: 'string' }, url: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  allowPositionals: false,
});
if (options.help) {
  console.log('Usage: npm run chat -- --user <email> [--password <password>] [--url http://127.0.0.1:3000]');
  process.exit(0);
}
const baseUrl = (options.url ?? `http://127.0.0.1:${readSection('server').HTTP_PORT ?? 3000}`).replace(/\/$/, '');

const tty = process.stdout.isTTY;
const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
// While a password is typed, readline echoes only the prompt itself (a private hook, absent on a non-terminal).
let mutedPrompt;
const write = rl._writeToOutput?.bind(rl);
if (write) {
  rl._writeToOutput = (text) => {
    if (mutedPrompt === undefined) return write(text);
    if (text.startsWith(mutedPrompt)) return write(mutedPrompt);
    if (text.includes('\n')) return write('\n');
  };
}
let closed = false;
let pending;
rl.on('close', () => {
  closed = true;
  pending?.(undefined);
});

/** One line from the user, or undefined once input has ended (Ctrl-D). */
const ask = (prompt) =>
  closed
    ? Promise.resolve(undefined)
    : new Promise((resolve) => {
        pending = resolve;
        rl.question(prompt, (answer) => {
          pending = undefined;
          resolve(answer);
        });
      });

const askHidden = async (prompt) => {
  mutedPrompt = prompt;
  try {
    return await ask(prompt);
  } finally {
    mutedPrompt = undefined;
  }
};

// A "working..." line while a run is in progress, cleared before anything else is printed.
const indicator = (() => {
  const frames = ['|', '/', '-', '\\'];
  let timer;
  let since = 0;
  let frame = 0;
  const clear = () => tty && process.stdout.write('\r\x1b[K');
  const draw = () => tty && process.stdout.write(`\r${frames[frame++ % frames.length]} working... ${((Date.now() - since) / 1000).toFixed(1)} s`);
  return {
    start() {
      since = Date.now();
      if (!tty) return void console.log('working...');
      draw();
      timer = setInterval(draw, 150);
    },
    print(line) {
      clear();
      console.log(line);
      if (timer) draw();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
      clear();
    },
  };
})();

const main = async () => {
  const email = options.user ?? (await ask('Email: '))?.trim();
  if (!email) throw new ApiError('no user given: npm run chat -- --user <email>');
  const password = options.password ?? ((await askHidden(`Password for ${email} (Enter for ${DEMO_PASSWORD}): `)) || DEMO_PASSWORD);

  const client = createClient(baseUrl);
  await client.login(email, password);
  const map = await client.map();
  const names = namesFromMap(map);
  const thread = await client.createThread(`chat: ${email}`);
  console.log(`Logged in as ${email} at ${baseUrl}. Thread ${thread.id}.`);
  console.log(`You can talk to ${map.roster.map((entry) => `${entry.name} (${entry.tools.length} tools)`).join(', ')}; Rover hands work to the others.`);
  console.log('Type a request ("list my classes", "show the staff"), /quit to leave.\n');

  for (;;) {
    const line = (await ask('you> '))?.trim();
    if (line === undefined || line === '/quit' || line === '/exit') break;
    if (!line) continue;
    const render = createRenderer({ names, indent: '' });
    try {
      const { runId } = await client.startRun(thread.id, line);
      let afterSeq = 0;
      for (;;) {
        indicator.start();
        let result;
        try {
          result = await client.stream(thread.id, runId, afterSeq, (event) => {
            for (const rendered of render(event)) indicator.print(rendered);
          });
        } finally {
          indicator.stop();
        }
        afterSeq = result.lastSeq;
        const { finish } = result;
        if (finish.type === 'RUN_ERROR' || finish.outcome !== 'interrupt') break;
        for (const interrupt of finish.interrupts ?? []) {
          const answer = await ask(`answer ${names[interrupt.askedBy] ?? interrupt.askedBy}> `);
          if (answer === undefined) return;
          await client.resume(thread.id, interrupt.interruptId, answer);
        }
      }
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      console.log(`! ${error.message}`);
    }
    console.log('');
  }
};

try {
  await main();
  rl.close();
  process.exit(0);
} catch (error) {
  indicator.stop();
  console.error(error instanceof ApiError ? error.message : (error?.stack ?? String(error)));
  rl.close();
  process.exit(1);
}
