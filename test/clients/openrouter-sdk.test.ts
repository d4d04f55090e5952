// OpenRouter's SDK (@openrouter/sdk, pinned), unchanged, against a real Assay server on loopback:
// only its serverURL (the base URL with /v1), key and model are set. It sends fields of its own
// (user, session_id, provider, trace), which Assay ignores as the hosted service does. It expects
// OpenRouter's `{error:{code,message}}` envelope on errors; Assay keeps the contract's `{detail}`
// bodies, so the SDK surfaces its own error classes with the status and the body readable.
import { HTTPClient, OpenRouter } from '@openrouter/sdk';
import { OpenRouterError } from '@openrouter/sdk/models/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysFromList, sha256 } from '../../src/api/auth.js';
import { SLOW_KEY, STATES } from './fixtures.js';
import { KEY, MODEL_ID, startListening, type TestServer } from '../api/helpers.js';

let s: TestServer;
let base: string;

beforeAll(async () => {
  ({ base, ...s } = await startListening({
    logging: false,
    keys: [...keysFromList(KEY), { name: 'slow', hash: sha256(SLOW_KEY), inputTokensPerSecond: 40 }],
  }));
});
afterAll(() => s.close());

function client(apiKey = KEY) {
  const seen: Array<{ status: number; at: number; headers: Headers }> = [];
  const fetcher = async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await fetch(input, init);
    seen.push({ status: res.status, at: performance.now(), headers: res.headers });
    return res;
  };
  const or = new OpenRouter({ apiKey, serverURL: `${base}/v1`, httpClient: new HTTPClient({ fetcher }) });
  return { or, seen };
}

const questions = {
  paid: { type: 'noul' as const, instructions: 'Was the invoice paid?', criteria: { true: 'paid', false: 'unpaid' } },
  channel: {
    type: 'choice' as const,
    instructions: 'How was it paid?',
    criteria: { card: 'a card', transfer: 'a bank transfer', cash: null },
  },
  punctuality: { type: 'score' as const, instructions: 'How punctual?', criteria: ['late', 'on the day', 'early'] },
};

describe("OpenRouter's SDK against Assay", () => {
  it.each(STATES)('answers the three question types about %s state', async (_kind, state) => {
    const { or } = client();
    const r = await or.systemOne.create({ decisionsRequest: { model: 'svc-latest', state, questions } });
    expect(r.model).toBe(MODEL_ID);
    expect(r.usage.inputTokens).toBeGreaterThan(0);
    const { paid, channel, punctuality } = r.answers as Record<string, Record<string, unknown>>;
    expect(paid!.type).toBe('noul');
    expect(Object.keys(channel!.probabilities as object).sort()).toEqual(['card', 'cash', 'transfer']);
    expect(Object.keys(punctuality!.probabilities as object)).toEqual(['0', '1', '2']);
  });

  it('sends its optional fields (user, session_id, provider, trace) and is answered', async () => {
    const { or } = client();
    const r = await or.systemOne.create({
      decisionsRequest: {
        model: 'svc-latest',
        state: 'x',
        questions: { paid: questions.paid },
        user: 'user-7',
        sessionId: 'session-7',
        provider: { allowFallbacks: false },
        trace: { traceId: 't-7' },
      },
    });
    expect(Object.keys(r.answers)).toEqual(['paid']);
  });

  it('401 and 422 surface as its error classes, status and body readable', async () => {
    const unauthorized = await client('wrong')
      .or.systemOne.create({ decisionsRequest: { model: 'svc-latest', state: 'x', questions } })
      .catch((e: unknown) => e);
    expect(unauthorized).toBeInstanceOf(OpenRouterError);
    expect((unauthorized as OpenRouterError).statusCode).toBe(401);
    expect((unauthorized as OpenRouterError).body).toContain('Invalid API key');
    const invalid = await client()
      .or.systemOne.create({ decisionsRequest: { model: 'jev-latest', state: 'x', questions } })
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(OpenRouterError);
    expect((invalid as OpenRouterError).statusCode).toBe(422);
    expect(JSON.parse((invalid as OpenRouterError).body).detail[0].loc).toEqual(['body', 'model']);
  });

  it('a 429, with 429 among its retry codes, is retried after the retry-after-ms the server sent', async () => {
    const { or, seen } = client(SLOW_KEY);
    const ask = (state: string) =>
      or.systemOne.create(
        { decisionsRequest: { model: 'svc-latest', state, questions: { paid: questions.paid } } },
        { retryCodes: ['429', '5XX'] },
      );
    await ask('The invoice was paid on time, by card.');
    const r = await ask('The invoice was paid late.');
    expect(Object.keys(r.answers)).toEqual(['paid']);
    const statuses = seen.map((x) => x.status);
    const refused = statuses.indexOf(429);
    expect(refused).toBeGreaterThan(0);
    expect(statuses[statuses.length - 1]).toBe(200);
    const told = Number(seen[refused]!.headers.get('retry-after-ms'));
    expect(seen[refused + 1]!.at - seen[refused]!.at).toBeGreaterThanOrEqual(told - 5);
  });

  it('the request id is on the raw response for its hooks and logs, under both header names', async () => {
    const { or, seen } = client();
    await or.systemOne.create({
      decisionsRequest: { model: 'svc-latest', state: 'x', questions: { paid: questions.paid } },
    });
    const last = seen[seen.length - 1]!.headers;
    expect(last.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(last.get('x-typesafe-request-id')).toBe(last.get('x-request-id'));
  });
});
