// The client SDK against the real server (buildServer + the tiny synthetic model on a real
// socket): answers and model list, 429 and 529 provoked for real and retried after the server's
// retry-after-ms, 401/422 not retried, timeouts and aborts.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/api/auth.js';
import { SystemOneResponseSchema } from '../../src/protocol/schemas.js';
import {
  AssayAbortError,
  AssayAPIError,
  AssayClient,
  AssayConnectionError,
  AssayTimeoutError,
  type Question,
  type RetryInfo,
} from '../../src/client/index.js';
import { KEY, startServer, testKeys, type TestServer } from '../api/helpers.js';

/** A key whose input-token budget is 100 tokens per second: one request puts it in debt. */
const LIMITED_KEY = 'test-key-limited';

let srv: TestServer;
let url: string;

beforeAll(async () => {
  srv = await startServer({
    // One request runs, none waits: a second concurrent request is refused with 529.
    engine: { maxQueue: 0 },
    keys: [...testKeys(), { name: 'limited', hash: sha256(LIMITED_KEY), inputTokensPerSecond: 100 }],
  });
  await srv.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(srv.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await srv?.close();
});

const QUESTIONS: Record<'late' | 'box' | 'mood', Question> = {
  late: {
    type: 'noul',
    instructions: 'Was the parcel late?',
    criteria: { true: 'after the promised day', false: null },
  },
  box: {
    type: 'choice',
    instructions: 'What state was the box in?',
    criteria: { intact: null, crushed: 'visibly damaged', wet: null },
  },
  mood: { type: 'score', instructions: 'How satisfied is the customer?', criteria: ['angry', 'neutral', 'pleased'] },
};
const STATE = { order: 'A-1043', note: 'The parcel arrived two days late and the box was crushed.' };

function client(extra: ConstructorParameters<typeof AssayClient>[0] = {}) {
  const retries: RetryInfo[] = [];
  const c = new AssayClient({ baseUrl: url, env: { ASSAY_API_KEY: KEY }, onRetry: (r) => retries.push(r), ...extra });
  return { c, retries };
}

describe('client against the real server', () => {
  it('evaluates all three question types and lists models, with request ids', async () => {
    const { c, retries } = client();
    const res = await c.evaluate({ state: STATE, questions: QUESTIONS });
    expect(SystemOneResponseSchema.parse(res)).toEqual(res);
    expect(res.model).toBe('svc-1.13.0');
    expect(Object.keys(res.answers).sort()).toEqual(['box', 'late', 'mood']);
    expect(res.answers.box!.type).toBe('choice');
    expect(res.answers.mood!.type).toBe('score');
    if (res.answers.mood?.type === 'score')
      expect(Object.keys(res.answers.mood.probabilities)).toEqual(['0', '1', '2']);
    expect(res.requestId).toMatch(/^req_/);
    // The request id rides along without changing the body.
    expect(JSON.parse(JSON.stringify(res))).not.toHaveProperty('requestId');

    const mine = await c.evaluate(
      { state: 'x', questions: { q: QUESTIONS.late } },
      { headers: { 'x-request-id': 'trace-abc-123' } },
    );
    expect(mine.requestId).toBe('trace-abc-123');

    const models = await c.listModels();
    expect(models.models.map((m) => m.name)).toEqual(expect.arrayContaining(['svc-latest', 'svc-preview']));
    expect(models.requestId).toMatch(/^req_/);
    expect(retries).toEqual([]);
  });

  it('sends question ids and options in the order given (a JS object lists integer-like keys first)', async () => {
    const sent: string[] = [];
    // The real fetch, the body it carried kept aside.
    const recording: typeof fetch = (input, init) => {
      if (typeof init?.body === 'string') sent.push(init.body);
      return fetch(input, init);
    };
    const { c } = client({ fetch: recording });
    const criteria = { '3': 'three', '1': 'one', '2': 'two' };
    const questions = { '10': { type: 'choice' as const, instructions: 'Which?', criteria }, '9': QUESTIONS.late };
    const order = [{ id: '10', options: ['3', '1', '2'] }, { id: '9' }];
    const res = await c.evaluate({ state: 'x', questions }, { order });
    expect(sent[0]).toContain(
      '"questions":{"10":{"type":"choice","instructions":"Which?","criteria":{"3":"three","1":"one","2":"two"}},"9":',
    );
    // The server prompted the options as sent: the answer of the same body posted as text.
    const raw = await fetch(`${url}/v1/systemone`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: sent[0],
    });
    expect(res.answers).toEqual(((await raw.json()) as { answers: unknown }).answers);
    // Without an order, the object's own: 1, 2, 3.
    await c.evaluate({ state: 'x', questions });
    expect(sent[1]).toContain('"criteria":{"1":"one","2":"two","3":"three"}');
  });

  it('reads the key from ASSAY_API_KEY and refuses to start without one', () => {
    expect(() => new AssayClient({ baseUrl: url, env: {} })).toThrow(/ASSAY_API_KEY/);
  });

  it('401 is not retried; the error carries status, detail and request id', async () => {
    const { c, retries } = client({ apiKey: 'not-a-key', maxRetries: 5 });
    const err = await c.evaluate({ state: 'x', questions: { q: QUESTIONS.late } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AssayAPIError);
    const e = err as AssayAPIError;
    expect(e.status).toBe(401);
    expect(e.detail).toBe('Invalid API key');
    expect(e.requestId).toMatch(/^req_/);
    expect(e.attempts).toBe(1);
    expect(retries).toEqual([]);
  });

  it('422 is not retried and exposes the validation errors', async () => {
    const { c, retries } = client();
    const err = (await c
      .evaluate({ state: 'x', questions: { c: { type: 'choice', instructions: 'no options', criteria: {} } } })
      .catch((e: unknown) => e)) as AssayAPIError;
    expect(err).toBeInstanceOf(AssayAPIError);
    expect(err.status).toBe(422);
    expect(err.validationErrors[0]!.loc).toEqual(['body', 'questions', 'c', 'choice', 'criteria']);
    expect(err.validationErrors[0]!.type).toBe('too_short');
    expect(retries).toEqual([]);
  });

  it('429 (token rate limit) is retried after the retry-after-ms the server sent, then succeeds', async () => {
    const { c, retries } = client({ apiKey: LIMITED_KEY, maxRetries: 3 });
    // The first request fits the 100-token bucket and leaves it in debt (it uses far more).
    const first = await c.evaluate({ state: STATE, questions: QUESTIONS });
    expect(first.usage.input_tokens).toBeGreaterThan(100);
    expect(retries).toEqual([]);
    // The next one is refused with 429 until the debt is repaid; the client waits as told.
    const second = await c.evaluate({ state: STATE, questions: { q: QUESTIONS.late } });
    expect(second.answers.q!.type).toBe('noul');
    expect(retries.length).toBe(1);
    const r = retries[0]!;
    expect(r.status).toBe(429);
    expect(r.delaySource).toBe('server');
    const told = Number((r.error as AssayAPIError).headers.get('retry-after-ms'));
    expect(told).toBeGreaterThan(0);
    expect(r.delayMs).toBe(told);
    expect(r.requestId).toMatch(/^req_/);
  });

  it('an abort during the wait for a retry stops at once, without another attempt', async () => {
    const { c } = client({ apiKey: LIMITED_KEY, maxRetries: 3 });
    await c.evaluate({ state: STATE, questions: QUESTIONS }).catch(() => undefined); // into debt (or already there)
    const ac = new AbortController();
    const { c: c2, retries } = client({
      apiKey: LIMITED_KEY,
      maxRetries: 3,
      onRetry: (r) => (retries.push(r), ac.abort(new Error('user cancelled'))),
    });
    const err = await c2
      .evaluate({ state: 'x', questions: { q: QUESTIONS.late } }, { signal: ac.signal })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AssayAbortError);
    expect((err as AssayAbortError).attempts).toBe(1);
    expect(retries.map((r) => r.status)).toEqual([429]);
  });

  it('529 (engine queue full) is retried after retry-after-ms until the engine has room', async () => {
    // Occupy the engine (maxQueue 0: nothing may wait) with a long evaluation on a fresh state.
    const big =
      `${Date.now()}\n` +
      Array.from({ length: 300 }, (_, i) => `Line ${i}: shipment ${i} was inspected and logged.`).join('\n');
    const questions = Object.fromEntries(
      Array.from({ length: 24 }, (_, i) => [
        `q${i}`,
        {
          type: 'score' as const,
          instructions: `Rate aspect ${i}`,
          criteria: ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'],
        },
      ]),
    );
    const blocker = srv.evaluator.evaluate({ state: big, questions });
    // Planned in a worker thread, then admitted: wait until it holds the engine.
    while (srv.evaluator.stats().running < 1) await new Promise((r) => setTimeout(r, 2));

    const { c, retries } = client({ maxRetries: 20 });
    const res = await c.evaluate({ state: STATE, questions: { q: QUESTIONS.late } });
    expect(res.answers.q!.type).toBe('noul');
    await blocker;

    expect(retries.length).toBeGreaterThanOrEqual(1);
    for (const r of retries) {
      expect(r.status).toBe(529);
      expect(r.delaySource).toBe('server');
      expect(r.delayMs).toBe(Number((r.error as AssayAPIError).headers.get('retry-after-ms')));
      expect((r.error as AssayAPIError).headers.get('retry-after')).toMatch(/^\d+$/);
    }
  });
});

describe('client: timeouts, aborts, connection errors', () => {
  // A peer that accepts requests and never answers (a hung server or a black-holed route).
  let hung: Server;
  let hungUrl: string;
  let received = 0;
  let lastHeaders: Record<string, unknown> = {};
  const waiters: (() => void)[] = [];
  beforeAll(async () => {
    hung = createServer((req) => {
      received++;
      lastHeaders = req.headers;
      waiters.splice(0).forEach((w) => w());
    });
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    hung.closeAllConnections();
    await new Promise((r) => hung.close(r));
  });

  it('a timed-out attempt is retried, then fails with AssayTimeoutError', async () => {
    received = 0;
    const retries: RetryInfo[] = [];
    const c = new AssayClient({
      baseUrl: hungUrl,
      apiKey: 'k',
      timeoutMs: 200,
      maxRetries: 1,
      retryBaseDelayMs: 1,
      onRetry: (r) => retries.push(r),
    });
    const err = await c.listModels().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AssayTimeoutError);
    expect((err as AssayTimeoutError).attempts).toBe(2);
    expect(received).toBe(2);
    expect(retries.map((r) => [r.status, r.delaySource])).toEqual([[undefined, 'backoff']]);
  });

  it('the caller’s AbortSignal aborts a request in flight; no retry', async () => {
    received = 0;
    const c = new AssayClient({ baseUrl: hungUrl, apiKey: 'k', maxRetries: 5 });
    const ac = new AbortController();
    waiters.push(() => ac.abort());
    const err = await c
      .evaluate({ state: 'x', questions: { q: QUESTIONS.late } }, { signal: ac.signal })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AssayAbortError);
    expect((err as Error).name).toBe('AbortError');
    expect(received).toBe(1);
    // What went out: the key, JSON, and the state hash an ingress can route on.
    expect(lastHeaders.authorization).toBe('Bearer k');
    expect(lastHeaders['content-type']).toBe('application/json');
    expect(lastHeaders['x-assay-state-hash']).toBe(createHash('sha256').update('"x"').digest('hex'));
  });

  it('a refused connection is retried with backoff, then reported', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const retries: RetryInfo[] = [];
    const c = new AssayClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'k',
      maxRetries: 2,
      retryBaseDelayMs: 1,
      onRetry: (r) => retries.push(r),
    });
    const err = await c.listModels().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AssayConnectionError);
    expect((err as AssayConnectionError).message).toContain('ECONNREFUSED');
    expect((err as AssayConnectionError).attempts).toBe(3);
    expect(retries.map((r) => r.delaySource)).toEqual(['backoff', 'backoff']);
  });
});
