#!/usr/bin/env node
// `npm run chat -- --user <email>`: talk to Rover from a terminal, against a running server (`npm start`).
// Logs in, opens a thread, and for each line you type posts a run and prints its events as they stream:
// assistant text under the speaker's name, tool calls with their RabbitMQ event and hop time, the scope of each
// result, audit ids. A question from an assistant (ask_user) is asked here and answered through resume.
// Options: --user <email>, --password <password> (else a prompt; Enter for the demo password), --url <server>.
// Ctrl-C during a run stops it (the server cancels it; a write it already committed stays, and is listed); a second
// Ctrl-C, or Ctrl-C at the prompt, leaves. Type /quit (or Ctrl-D) to leave too.
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ApiError, createClient, createRenderer, editHint, expiryText, inlineEdits, namesFromMap, stopLines } from './agent-client.mjs';
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

/** One line from the user, or undefined once input has ended (Ctrl-D) or `signal` stopped the asking (a stopped run). */
const ask = (prompt, signal) =>
  closed || signal?.aborted
    ? Promise.resolve(undefined)
    : new Promise((resolve) => {
        const done = (answer) => {
          pending = undefined;
          signal?.removeEventListener('abort', onAbort);
          resolve(answer);
        };
        // The prompt's line is already taken by the "stopping" line.
        const onAbort = () => done(undefined);
        pending = done;
        signal?.addEventListener('abort', onAbort, { once: true });
        rl.question(prompt, signal ? { signal } : {}, done);
      });

const askHidden = async (prompt) => {
  mutedPrompt = prompt;
  try {
    return await ask(prompt);
  } finally {
    mutedPrompt = undefined;
  }
};

// A "working..." line while a run is in progress, cleared before anything else is printed. While a line of streamed
// text is open (a message still arriving), it is not drawn: it would take the text's line.
const indicator = (() => {
  const frames = ['|', '/', '-', '\\'];
  let timer;
  let since = 0;
  let frame = 0;
  let lineOpen = false;
  const clear = () => tty && !lineOpen && process.stdout.write('\r\x1b[K');
  const draw = () => tty && !lineOpen && process.stdout.write(`\r${frames[frame++ % frames.length]} working... ${((Date.now() - since) / 1000).toFixed(1)} s`);
  const indicator = {
    start() {
      since = Date.now();
      if (!tty) return void console.log('working...');
      draw();
      timer = setInterval(draw, 150);
    },
    /** Streamed text: whole lines, or part of one (no line break until its message ends). */
    write(text) {
      if (!text) return;
      clear();
      process.stdout.write(text);
      lineOpen = !text.endsWith('\n');
      if (timer) draw();
    },
    print(line) {
      indicator.write(`${lineOpen ? '\n' : ''}${line}\n`);
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
      if (lineOpen) process.stdout.write('\n');
      lineOpen = false;
      clear();
    },
  };
  return indicator;
})();

// The run in progress, for Ctrl-C: its id, what aborts the waiting on it, and the stop once one was asked for.
let current;
let leaving = false;

/** Leaves: after a stop already asked for has had a moment to reach the server. */
const leave = async () => {
  if (leaving) return;
  leaving = true;
  indicator.stop();
  if (current?.stop) await Promise.race([current.stop, new Promise((resolve) => setTimeout(resolve, 2_000))]);
  console.log('\nBye.');
  rl.close();
  process.exit(0);
};

/**
 * Ctrl-C: during a run, the first stops it (POST .../cancel, and the waiting on it ends); a second, or one at the
 * prompt, leaves. In a terminal readline reads Ctrl-C as a key and reports it here; elsewhere it arrives as SIGINT.
 */
const onInterrupt = () => {
  const run = current;
  if (!run || run.stop) return void leave();
  indicator.print('^C stopping the run... (Ctrl-C again leaves)');
  run.stop = run.client.cancelRun(run.threadId, run.runId).then(
    (answer) => {
      run.stopped = answer;
    },
    (error) => {
      run.stopError = error;
    },
  );
  run.stop.finally(() => run.controller.abort());
};
rl.on('SIGINT', onInterrupt);
process.on('SIGINT', onInterrupt);

/** What a stop came to, unless the run's own stream already said it (its RUN_FINISHED with the cancelled outcome). */
const reportStop = (run) => {
  if (run.stopError) return void console.log(`! could not stop the run: ${run.stopError.message}`);
  if (run.sawStop || !run.stopped) return;
  const { status, cancelled, committedWrites } = run.stopped;
  if (!cancelled && status !== 'cancelled') return void console.log(`the run had already ended (${status}); nothing to stop.`);
  for (const line of stopLines(committedWrites)) console.log(line);
};

const CHOICES = {
  RUN_IN_PROGRESS: ['Another run is still going in this conversation.', 'q: queue this message, s: stop that run and send it, Enter: drop it> '],
  QUESTION_PENDING: ['A question in this conversation is waiting for an answer.', 's: stop that run and send this message, Enter: drop it> '],
  RUN_QUEUE_FULL: ['Too many messages are already waiting in this conversation.', 's: stop the current run and send this message, Enter: drop it> '],
};

/**
 * Starts a run with the default strategy (reject). If another run holds the thread (another client's), the user
 * chooses: queue it (enqueue) or stop that run and send it (interrupt). Undefined: dropped.
 */
const start = async (client, threadId, line) => {
  try {
    return await client.startRun(threadId, line);
  } catch (error) {
    const choice = error instanceof ApiError ? CHOICES[error.code] : undefined;
    if (!choice) throw error;
    console.log(choice[0]);
    const picked = (await ask(choice[1]))?.trim().toLowerCase();
    const multitaskStrategy = picked === 'q' && error.code === 'RUN_IN_PROGRESS' ? 'enqueue' : picked === 's' ? 'interrupt' : undefined;
    if (!multitaskStrategy) return void console.log('(not sent)');
    return client.startRun(threadId, line, { multitaskStrategy });
  }
};

/** One message as a run, followed to its end: the events as lines, questions asked and answered, Ctrl-C to stop it. */
const converse = async (client, names, threadId, line) => {
  const render = createRenderer({ names, indent: '' });
  const started = await start(client, threadId, line);
  if (!started) return !closed;
  const { runId, status } = started;
  const run = { client, threadId, runId, controller: new AbortController() };
  current = run;
  let saidQueued = false;
  const queued = (now) => {
    if (now !== 'queued' || saidQueued) return;
    saidQueued = true;
    indicator.print('queued: waiting for the current reply to finish.');
  };
  try {
    if (status === 'queued') queued(status);
    let afterSeq = 0;
    for (;;) {
      indicator.start();
      let result;
      try {
        result = await client.follow(
          threadId,
          runId,
          afterSeq,
          (event) => {
            if (event.type === 'RUN_FINISHED' && event.outcome.type === 'cancelled') run.sawStop = true;
            indicator.write(render(event));
          },
          { signal: run.controller.signal, onStatus: queued },
        );
      } finally {
        indicator.stop();
      }
      afterSeq = result.lastSeq;
      const { finish } = result;
      if (finish.type === 'RUN_ERROR' || finish.outcome.type !== 'interrupt') break;
      for (const interrupt of finish.outcome.interrupts) {
        // The server stamps each question's expiry on the event it stores.
        if (interrupt.expiresAt) console.log(`(this question ${expiryText(interrupt.expiresAt)}; unanswered by then, the run ends. Ctrl-C stops the run.)`);
        const hint = editHint(interrupt);
        if (hint) console.log(hint);
        const askedBy = interrupt.metadata.askedBy;
        // An edit the server refuses (400) leaves the question waiting: say why and ask again.
        let answer;
        for (;;) {
          answer = await ask(`answer ${names[askedBy] ?? askedBy}> `, run.controller.signal);
          if (answer === undefined) break;
          try {
            await client.resume(threadId, interrupt.id, answer, inlineEdits(answer, interrupt));
            break;
          } catch (error) {
            if (!(error instanceof ApiError) || error.status !== 400) throw error;
            console.log(error.sentence ?? error.message);
          }
        }
        if (answer === undefined) {
          if (run.stop) break;
          return false;
        }
      }
      if (run.stop) break;
    }
  } catch (error) {
    // Waiting on a stopped run ends by its abort; anything else is the caller's.
    if (!run.stop || !run.controller.signal.aborted || error instanceof ApiError) throw error;
  } finally {
    if (run.stop) {
      await run.stop;
      reportStop(run);
    }
    current = undefined;
  }
  return true;
};

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
  console.log('Type a request ("list my classes", "show the staff"), /quit to leave. Ctrl-C stops a run; Ctrl-C at the prompt leaves.\n');

  for (;;) {
    const line = (await ask('you> '))?.trim();
    if (line === undefined || line === '/quit' || line === '/exit') break;
    if (!line) continue;
    try {
      if (!(await converse(client, names, thread.id, line))) return;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      // The server's sentence when it gave one (a spent daily allowance, say), else what was asked and answered.
      console.log(`! ${error.sentence ?? error.message}`);
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
