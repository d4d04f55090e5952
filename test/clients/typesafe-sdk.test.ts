// The official TypeScript SDK (@typesafe-ai/sdk, pinned), unchanged, against a real Assay server on
// loopback: only its base URL, key and model are set. A new SDK version that breaks shows up here.
import {
  noul,
  choice,
  score,
  RateLimitError,
  TypeSafeClient,
  UnprocessableEntityError,
  AuthenticationError,
} from '@typesafe-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysFromList, sha256 } from '../../src/api/auth.js';
import { SLOW_KEY, STATES } from './fixtures.js';
import { KEY, MODEL_ID, startListening, testRegistry, type TestServer } from '../api/helpers.js';

let s: TestServer;
let base: string;

beforeAll(async () => {
  ({ base, ...s } = await startListening({
    logging: false,
    keys: [...keysFromList(KEY), { name: 'slow', hash: sha256(SLOW_KEY), inputTokensPerSecond: 40 }],
  }));
});
afterAll(() => s.close());

/** The client as a user configures it, plus a fetch that records what went over the wire. */
function client(over: { apiKey?: string; defaultModel?: string } = {}) {
  const seen: Array<{ status: number; at: number; headers: Headers }> = [];
  const fetch = async (input: string, init?: RequestInit) => {
    const res = await globalThis.fetch(input, init);
    seen.push({ status: res.status, at: performance.now(), headers: res.headers });
    return res;
  };
  return {
    c: new TypeSafeClient({ apiKey: KEY, baseURL: base, defaultModel: 'svc-latest', logLevel: 'off', fetch, ...over }),
    seen,
  };
}

const questions = {
  paid: noul('Was the invoice paid?', { true: 'paid', false: 'unpaid' }),
  channel: choice('How was it paid?', { card: 'a card', transfer: 'a bank transfer', cash: null }),
  punctuality: score('How punctual?', ['late', 'on the day', 'early']),
};

describe('official TypeScript SDK against Assay', () => {
  it.each(STATES)('answers the three question types about %s state', async (_kind, state) => {
    const { c } = client();
    const r = await c.systemOne({ state, questions });
    expect(r.model).toBe(MODEL_ID);
    expect(r.answers.paid.noul).toBeGreaterThanOrEqual(0);
    expect(Object.keys(r.answers.channel.probabilities).sort()).toEqual(['card', 'cash', 'transfer']);
    expect(['card', 'cash', 'transfer']).toContain(r.answers.channel.choice);
    expect(Object.keys(r.answers.punctuality.legend)).toEqual(['0', '1', '2']);
    expect(r.usage.input_tokens).toBeGreaterThan(0);
  });

  it('reports the request id the server sent', async () => {
    const { c } = client();
    const { data, response, requestId } = await c
      .systemOne({ state: 'x', questions: { paid: questions.paid } })
      .withResponse();
    expect(data.answers.paid.type).toBe('noul');
    expect(requestId).toMatch(/^req_[0-9a-f]{32}$/);
    expect(requestId).toBe(response.headers.get('x-request-id'));
  });

  it('sends fields added to the request object as they are (it spreads the request into the body), and Assay ignores them', async () => {
    const sent: string[] = [];
    const c = new TypeSafeClient({
      apiKey: KEY,
      baseURL: base,
      defaultModel: 'svc-latest',
      logLevel: 'off',
      fetch: (input, init) => {
        sent.push(String(init?.body));
        return globalThis.fetch(input, init);
      },
    });
    const request = { state: 'x', questions: { paid: questions.paid }, user: 'user-7', metadata: { team: 'billing' } };
    const r = await c.systemOne(request);
    expect(JSON.parse(sent[0]!)).toMatchObject({ user: 'user-7', metadata: { team: 'billing' } });
    expect(r.answers.paid.type).toBe('noul');
  });

  it('lists the models', async () => {
    const { c } = client();
    const names = (await c.models.list()).map((m) => m.name);
    expect(names).toContain('svc-latest');
  });

  it('401 is its AuthenticationError, not retried', async () => {
    const { c, seen } = client({ apiKey: 'wrong' });
    const err = await c.systemOne({ state: 'x', questions }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).status).toBe(401);
    expect((err as AuthenticationError).requestId).toMatch(/^req_/);
    expect(seen.map((x) => x.status)).toEqual([401]);
  });

  it('422 is its UnprocessableEntityError, with the message built from detail (here: the SDK default model jev-latest, unknown without an alias)', async () => {
    const { c } = client({ defaultModel: 'jev-latest' });
    const err = await c.systemOne({ state: 'x', questions }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnprocessableEntityError);
    expect((err as UnprocessableEntityError).status).toBe(422);
    expect((err as Error).message).toContain('model');
  });

  it('a 429 is retried by the SDK after the retry-after-ms the server sent, then answered', async () => {
    const { c, seen } = client({ apiKey: SLOW_KEY });
    // The first call uses more than the key's 40 input tokens a second; the next waits for the refill.
    await c.systemOne({ state: 'The invoice was paid on time, by card.', questions: { paid: questions.paid } });
    const r = await c.systemOne({ state: 'The invoice was paid late.', questions: { paid: questions.paid } });
    expect(r.answers.paid.type).toBe('noul');
    const statuses = seen.map((x) => x.status);
    expect(statuses[0]).toBe(200);
    const refused = statuses.indexOf(429);
    expect(refused).toBeGreaterThan(0);
    expect(statuses[statuses.length - 1]).toBe(200);
    const told = Number(seen[refused]!.headers.get('retry-after-ms'));
    expect(told).toBeGreaterThan(0);
    // The SDK waited what it was told before the retry (timer granularity aside).
    expect(seen[refused + 1]!.at - seen[refused]!.at).toBeGreaterThanOrEqual(told - 5);
  });

  it('a 429 left unretried is its RateLimitError with retryAfterMs', async () => {
    const { c } = client({ apiKey: SLOW_KEY });
    await c
      .systemOne({ state: 'The invoice was paid on time, by card.', questions: { paid: questions.paid } })
      .catch(() => undefined);
    const err = await c
      .systemOne({ state: 'x', questions: { paid: questions.paid } }, { retry: { maxRetries: 0 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfterMs).toBeGreaterThan(0);
  });

  it('reads TYPESAFE_BASE_URL and TYPESAFE_DEFAULT_MODEL; the default jev-latest works once the operator aliases it', async () => {
    const aliased = await startListening({
      logging: false,
      evaluator: s.evaluator,
      // The official SDK's default model is the hosted brand's `jev-latest`: an operator alias makes it work unchanged.
      registry: testRegistry(s.evaluator.modelDir, { 'jev-latest': MODEL_ID }),
    });
    const env = {
      TYPESAFE_API_KEY: process.env.TYPESAFE_API_KEY,
      TYPESAFE_BASE_URL: process.env.TYPESAFE_BASE_URL,
      TYPESAFE_DEFAULT_MODEL: process.env.TYPESAFE_DEFAULT_MODEL,
    };
    try {
      process.env.TYPESAFE_API_KEY = KEY;
      process.env.TYPESAFE_BASE_URL = `${aliased.base}/`;
      delete process.env.TYPESAFE_DEFAULT_MODEL;
      const r = await new TypeSafeClient({ logLevel: 'off' }).systemOne({
        state: 'x',
        questions: { paid: questions.paid },
      });
      expect(r.model).toBe(MODEL_ID);
      process.env.TYPESAFE_DEFAULT_MODEL = 'svc-latest';
      expect(
        (await new TypeSafeClient({ logLevel: 'off' }).systemOne({ state: 'x', questions: { paid: questions.paid } }))
          .model,
      ).toBe(MODEL_ID);
    } finally {
      for (const [k, v] of Object.entries(env)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await aliased.app.close();
    }
  });
});
