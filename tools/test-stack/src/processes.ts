import { spawn, type ChildProcess } from 'node:child_process';

/** A built entry point running as a child process of the test. */
export type BuiltProcess = {
  child: ChildProcess;
  pid: number | undefined;
  /** What it printed so far, stdout and stderr together: for failure messages and for checking its log. */
  output: () => string;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
};

export type ServerProcess = BuiltProcess & { baseUrl: string; port: number };

export const stopChild = async (child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
};

type SpawnOptions = {
  what: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  isReady: (output: string) => boolean | Promise<boolean>;
  /** Sees the child at once, so a teardown can stop one that never became ready. */
  onSpawn?: (child: ChildProcess) => void;
};

/**
 * Resolves once `isReady(output)` holds; throws, with the output, if the process exits first or is not ready within
 * `timeoutMs`.
 */
const spawnUntilReady = async ({ what, args, env, timeoutMs, isReady, onSpawn }: SpawnOptions): Promise<BuiltProcess> => {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  onSpawn?.(child);
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`The ${what} exited at start-up:\n${output}`);
    if (await isReady(output)) break;
    if (Date.now() > deadline) throw new Error(`The ${what} was not ready within ${timeoutMs / 1000} s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, pid: child.pid, output: () => output, stop: (signal) => stopChild(child, signal) };
};

export type ServerStart = { script: string; nodeArgs?: string[]; env: NodeJS.ProcessEnv; onSpawn?: (child: ChildProcess) => void };

/**
 * A server entry point on a port of its own; resolves when /ready answers. The port is drawn below Linux's ephemeral
 * range (32768 and up), where the system's own outgoing connections take theirs, so a server restarted after a kill
 * does not find it taken by one of them; and drawn again if it is taken anyway.
 */
export const startServerProcess = async (start: ServerStart, attempt = 1): Promise<ServerProcess> => {
  const port = 20_000 + Math.floor(Math.random() * 12_000);
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    const started = await spawnUntilReady({
      what: 'server',
      args: [...(start.nodeArgs ?? []), start.script],
      env: { ...start.env, HTTP_PORT: String(port) },
      timeoutMs: 30_000,
      isReady: () => fetch(`${baseUrl}/ready`).then((response) => response.ok, () => false),
      onSpawn: start.onSpawn,
    });
    return { ...started, baseUrl, port };
  } catch (error) {
    if (error instanceof Error && error.message.includes('EADDRINUSE') && attempt < 5) return startServerProcess(start, attempt + 1);
    throw error;
  }
};

/** The worker's entry point; resolves when it says it consumes the runs queue (which it prints at LOG_LEVEL=log). */
export const startWorkerProcess = (script: string, env: NodeJS.ProcessEnv, onSpawn?: (child: ChildProcess) => void): Promise<BuiltProcess> =>
  // Generous: loading LangChain takes seconds, and longer while other suites run beside this one.
  spawnUntilReady({ what: 'worker', args: [script], env, timeoutMs: 60_000, isReady: (output) => output.includes('Worker ready'), onSpawn });
