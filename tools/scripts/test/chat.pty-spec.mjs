// `npm run chat` as a person at a terminal runs it: in a pseudo-terminal (util-linux `script -qfec`, no node-pty), typing
// lines and Ctrl-C (the byte 0x03, which the terminal turns into readline's SIGINT, or into a SIGINT where it is not in
// raw mode), against the built server and worker on a stack of their own. The worker is frozen (SIGSTOP) to hold a run
// running with nobody working on it; the server gives such a step up after two leases of 6 s (RUN_ABANDONED).
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { createTestStack, login } from '@naalya/test-stack';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const USER = 'admin@greenhill.school';
const CTRL_C = '\x03';
const ENTER = '\r';
const LIFECYCLE = { AGENT_RUN_LEASE_SECONDS: '6', AGENT_RUN_MAX_ATTEMPTS: '2', AGENT_RUN_SWEEP_INTERVAL_MS: '500' };
// The scripted model's chunks paced, so a reply reaches the terminal word by word.
const SCRIPTED_STREAM = { AGENT_SCRIPTED_STREAM_DELAY_MS: '30' };

/** What a person sees: colours and cursor moves dropped, each carriage return (the spinner's redraws) a line break. */
const visible = (raw) => raw.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r\n?/g, '\n');

/** `npm run chat` in a pseudo-terminal: what it printed, typing, and waiting for a line to show. */
const startChat = (baseUrl) => {
  const command = `npm run --silent chat -- --user ${USER} --password naalya-demo --url ${baseUrl}`;
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, TERM: 'xterm', NO_COLOR: '1' },
  });
  let raw = '';
  // What the screen showed after each piece of output: a streamed reply shows in part before it is whole.
  const screens = [];
  child.stdout.on('data', (chunk) => {
    raw += chunk;
    screens.push(visible(raw));
  });
  child.stderr.on('data', (chunk) => (raw += chunk));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let cursor = 0;
  const chat = {
    child,
    exited,
    output: () => visible(raw),
    /** Waits until `pattern` shows after what the last wait consumed; moves past it. */
    async expect(pattern, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const text = visible(raw);
        const match = pattern.exec(text.slice(cursor));
        if (match) {
          cursor += match.index + match[0].length;
          return match;
        }
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(`${child.exitCode !== null ? `chat exited (${child.exitCode})` : 'timed out'} waiting for ${pattern}; it printed:\n${text.slice(cursor) || text}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    type: (text) => child.stdin.write(text),
    /** Whether `line` was on the screen in part: some output ended inside it, before its end. */
    seenInPart(line, prefix) {
      return screens.some((screen) => {
        const last = screen.slice(screen.lastIndexOf('\n') + 1);
        return last.length > prefix.length && last.length < line.length && line.startsWith(last);
      });
    },
  };
  return chat;
};

let stack;
let worker;
let token;
let frozen = false;
const freezeWorker = () => {
  process.kill(worker.pid, 'SIGSTOP');
  frozen = true;
};
const thawWorker = () => {
  if (!frozen) return;
  process.kill(worker.pid, 'SIGCONT');
  frozen = false;
};
const api = async (path, body) => {
  const response = await fetch(`${stack.server().baseUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
};
const runsOf = async (threadId) => (await api(`/agent/threads/${threadId}`)).body.runs;

beforeAll(async () => {
  if (spawnSync('script', ['--version']).status !== 0) throw new Error("The chat's terminal test needs `script` (util-linux; on Debian the bsdutils package).");
  stack = await createTestStack({ name: 'chat', env: LIFECYCLE });
  await stack.startServer();
  worker = await stack.startWorker(SCRIPTED_STREAM);
  token = await login(stack.server().baseUrl, USER);
}, 150_000);

afterAll(async () => {
  thawWorker();
  await stack?.teardown();
});

afterEach(() => thawWorker());

describe('npm run chat in a pseudo-terminal', () => {
  let chat;
  let threadId;

  afterAll(() => {
    if (chat && chat.child.exitCode === null) chat.child.kill('SIGKILL');
  });

  it('logs in, opens a thread, and answers a request: the reply arrives in pieces, on one line', async () => {
    chat = startChat(stack.server().baseUrl);
    threadId = (await chat.expect(/Thread ([0-9a-f-]{36})\./))[1];
    await chat.expect(/Ctrl-C stops a run; Ctrl-C at the prompt leaves\./);
    await chat.expect(/you> /);
    chat.type(`list departments${ENTER}`);
    // The tool call: its name, then its arguments on the same line once complete.
    await chat.expect(/Rover calls list_departments \{\}  \[RabbitMQ event [a-z.-]+\]\n/);
    const reply = (await chat.expect(/Rover: \[scripted model\][^\n]*\n/))[0].trimEnd();
    expect(reply.split(' ').length).toBeGreaterThan(4);
    expect(chat.seenInPart(reply, 'Rover: ')).toBe(true);
    await chat.expect(/you> /);
    expect((await runsOf(threadId)).map((run) => run.status)).toEqual(['finished']);
  });

  it('Ctrl-C during a run stops it: the server cancels it, the chat says so, and takes the next message', async () => {
    freezeWorker();
    chat.type(`show the staff${ENTER}`);
    await chat.expect(/working\.\.\./);
    await expect.poll(async () => (await runsOf(threadId)).at(-1)?.status).toBe('running');
    chat.type(CTRL_C);
    await chat.expect(/\^C stopping the run\.\.\. \(Ctrl-C again leaves\)/);
    await chat.expect(/stopped; nothing had been changed\./);
    await chat.expect(/you> /);
    const runs = await runsOf(threadId);
    expect(runs.at(-1)).toMatchObject({ message: 'show the staff', status: 'cancelled' });

    thawWorker();
    chat.type(`list campuses${ENTER}`);
    await chat.expect(/Rover: \[scripted model\]/);
    await chat.expect(/you> /);
    expect((await runsOf(threadId)).map((run) => run.status)).toEqual(['finished', 'cancelled', 'finished']);
  });

  it('another run holds the thread: the chat offers the choice, "q" queues the message, which runs when that run ends', async () => {
    freezeWorker();
    const other = await api(`/agent/threads/${threadId}/runs`, { message: 'list subjects' });
    expect(other.status).toBe(201);
    chat.type(`list campuses${ENTER}`);
    await chat.expect(/Another run is still going in this conversation\./);
    await chat.expect(/q: queue this message, s: stop that run and send it, Enter: drop it> /);
    chat.type(`q${ENTER}`);
    await chat.expect(/queued: waiting for the current reply to finish\./);
    expect((await runsOf(threadId)).at(-1)).toMatchObject({ message: 'list campuses', status: 'queued' });

    // That run ends (stopped through the API): the queued message starts, and is answered once the worker is back.
    const cancel = await api(`/agent/threads/${threadId}/runs/${other.body.runId}/cancel`, {});
    expect(cancel.body).toMatchObject({ cancelled: true, status: 'cancelled', committedWrites: [] });
    thawWorker();
    await chat.expect(/Rover: \[scripted model\]/);
    await chat.expect(/you> /);
    expect((await runsOf(threadId)).slice(-2).map((run) => [run.message, run.status])).toEqual([
      ['list subjects', 'cancelled'],
      ['list campuses', 'finished'],
    ]);
  });

  it('a question says when it expires; Ctrl-C at its answer stops the run: the question can no longer be answered, the thread takes the next message', async () => {
    chat.type(`delete the Sciences department${ENTER}`);
    await chat.expect(/Rover asks you to confirm: Delete the department "/);
    await chat.expect(/\(this question expires in 23 h; unanswered by then, the run ends\. Ctrl-C stops the run\.\)/);
    await chat.expect(/answer Rover> /);
    chat.type(CTRL_C);
    await chat.expect(/stopped; nothing had been changed\./);
    await chat.expect(/you> /);
    const run = (await runsOf(threadId)).at(-1);
    expect(run).toMatchObject({ status: 'cancelled', interrupts: [{ answered: false, voided: true }] });
    const departments = await api('/departments');
    expect(departments.body.map((department) => department.name)).toContain('Sciences');
    const late = await api(`/agent/threads/${threadId}/resume`, { interruptId: run.interrupts[0].interruptId, answer: 'yes' });
    expect(late.status).toBe(409);

    // The thread is free again: the next message is answered (the stopped question does not hold it).
    chat.type(`list campuses${ENTER}`);
    await chat.expect(/Rover: \[scripted model\]/);
    await chat.expect(/you> /);
    expect((await runsOf(threadId)).at(-1)).toMatchObject({ message: 'list campuses', status: 'finished' });
  });

  it('a run the server gives up on shows as failed, with its sentence', async () => {
    freezeWorker();
    chat.type(`list subjects${ENTER}`);
    await chat.expect(new RegExp(`run failed: ${ERROR_SENTENCES.RUN_ABANDONED.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 45_000);
    await chat.expect(/you> /);
    expect((await runsOf(threadId)).at(-1)).toMatchObject({ status: 'failed', errorCode: 'RUN_ABANDONED' });
  });

  it('Ctrl-C at the prompt leaves', async () => {
    chat.type(CTRL_C);
    await chat.expect(/Bye\./);
    expect(await chat.exited).toEqual({ code: 0, signal: null });
  });

  it('two Ctrl-C during a run: the first stops it, the second leaves', async () => {
    const second = startChat(stack.server().baseUrl);
    try {
      const thread = (await second.expect(/Thread ([0-9a-f-]{36})\./))[1];
      await second.expect(/you> /);
      freezeWorker();
      second.type(`show the staff${ENTER}`);
      await second.expect(/working\.\.\./);
      await expect.poll(async () => (await runsOf(thread)).at(-1)?.status).toBe('running');
      second.type(CTRL_C + CTRL_C);
      await second.expect(/Bye\./);
      expect(await second.exited).toEqual({ code: 0, signal: null });
      expect((await runsOf(thread)).at(-1)).toMatchObject({ message: 'show the staff', status: 'cancelled' });
    } finally {
      if (second.child.exitCode === null) second.child.kill('SIGKILL');
    }
  });
});
