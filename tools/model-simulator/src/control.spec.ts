import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelSimulator, type ModelSimulator } from './index.js';

/** The simulator's own HTTP surface: loading scripts, the record, its bounds, and a script that runs out. */

let sim: ModelSimulator;
beforeAll(async () => {
  sim = await startModelSimulator({ maxBodyBytes: 10_000 });
});
afterAll(() => sim.close());

const post = (path: string, body: unknown) =>
  fetch(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });

const chat = { model: 'sim', messages: [{ role: 'user', content: 'hi' }] };

describe('model simulator control API', () => {
  it('loads a script over HTTP and answers the next request from it', async () => {
    await post('/_simulator/reset', {});
    const loaded = await post('/_simulator/script', { turns: [{ kind: 'text', text: 'scripted over HTTP', usage: { inputTokens: 3, outputTokens: 4 } }] });
    expect(await loaded.json()).toEqual({ ok: true, turns: 1 });
    const reply = (await (await post('/v1/chat/completions', chat)).json()) as { choices: { message: { content: string } }[]; usage: unknown };
    expect(reply.choices[0]?.message.content).toBe('scripted over HTTP');
    expect(reply.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
  });

  it('answers a bad script with a 400 naming the problem, and keeps the script it had', async () => {
    sim.setScript({ turns: [{ kind: 'text', text: 'still here' }] });
    const refused = await post('/_simulator/script', { turns: [{ kind: 'text' }, { kind: 'rate_limit', retryAfterSeconds: 3600 }, { kind: 'sing' }] });
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: string };
    expect(error).toContain('invalid model simulator script');
    expect(error).toContain('turns[0].text');
    expect(error).toContain('turns[1].retryAfterSeconds');
    expect(error).toContain('turns[2].kind');
    const reply = (await (await post('/v1/chat/completions', chat)).json()) as { choices: { message: { content: string } }[] };
    expect(reply.choices[0]?.message.content).toBe('still here');
  });

  it('answers a script that is not JSON with a 400', async () => {
    const refused = await post('/_simulator/script', '{"turns": [');
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toMatch(/not JSON/);
  });

  it('refuses a programmatic bad script by throwing', () => {
    expect(() => sim.setScript({ turns: [{ kind: 'text', text: 'x', delayMs: 10 * 60_000 }] })).toThrow(/delayMs/);
  });

  it('answers a request past the end of the script with a 400 in the API shape, and records it', async () => {
    sim.reset();
    sim.setScript({ turns: [] });
    const reply = await post('/v1/messages', { model: 'sim', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    expect(reply.status).toBe(400);
    expect(await reply.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('no turn left') } });
    const recorded = (await (await fetch(`${sim.url}/_simulator/requests`)).json()) as unknown[];
    expect(recorded).toMatchObject([{ api: 'anthropic', path: '/v1/messages', turn: null }]);
  });

  it('refuses an oversized request body with a 413', async () => {
    sim.setScript({ turns: [{ kind: 'text', text: 'unused' }] });
    const reply = await post('/v1/chat/completions', { ...chat, messages: [{ role: 'user', content: 'x'.repeat(20_000) }] });
    expect(reply.status).toBe(413);
  });

  it('refuses an unknown_tool turn when the request did offer that tool', async () => {
    sim.setScript({ turns: [{ kind: 'unknown_tool', name: 'lookup_staff' }] });
    const reply = await post('/v1/chat/completions', { ...chat, tools: [{ type: 'function', function: { name: 'lookup_staff', parameters: {} } }] });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(await reply.json())).toContain('the request offered it');
  });

  it('closes promptly while a scripted delay is pending', async () => {
    const other = await startModelSimulator({ script: { turns: [{ kind: 'text', text: 'late', delayMs: 20_000 }] } });
    const pending = fetch(`${other.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chat) }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await pending).toBeInstanceOf(Error);
  });
});
