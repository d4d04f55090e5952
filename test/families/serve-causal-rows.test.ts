// The causal-row replicas (decision-endpoint, arbiter-fixed) as published folders, registered with
// their path only (the family detected from decision.json), served in-process by the API over a
// real socket: the three question types answer from the family, a refusal of what the head cannot
// read is a 422 naming the limit, and /metrics says each model's family and that it reuses no prefix.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { checkRegistry } from '../../src/registry/registry.js';
import { createModelPool } from '../../src/service/model-pool.js';
import { ensureArbiterReplica } from '../../tools/families/arbiter/replica.js';
import { ensureDecisionReplica } from '../../tools/families/decision/replica.js';
import { auth, testKeys } from '../api/helpers.js';

const LEVELS = ['none', 'slight', 'some', 'clear', 'strong', 'total'];
const MODELS = {
  'decision-1': { path: ensureDecisionReplica(), family: 'decision-endpoint', tooMany: 256, limit: /255/ },
  'arbiter-1': { path: ensureArbiterReplica(), family: 'arbiter-fixed', tooMany: 17, limit: /16 choice slots/ },
};

let app: AssayServer;
let base: string;
let pool: ReturnType<typeof createModelPool>;
beforeAll(async () => {
  const registry = checkRegistry(
    {
      default: 'decision-1',
      models: Object.fromEntries(
        Object.entries(MODELS).map(([id, m]) => [
          id,
          { path: m.path, description: `${m.family} replica`, release_date: '2026-11-27' },
        ]),
      ),
      aliases: {},
    },
    '/tmp/assay-causal-rows-registry.json',
  );
  pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: () => {} });
  await pool.preload();
  app = await buildServer({ registry, models: pool, keys: testKeys(), logging: false });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
}, 600_000);
afterAll(async () => {
  await app?.close();
  await pool?.close();
});

const post = (body: unknown) =>
  fetch(`${base}/v1/systemone`, { method: 'POST', headers: auth(), body: JSON.stringify(body) });

describe.each(Object.entries(MODELS))('%s (%s folder, as published)', (model, m) => {
  it('answers the three question types from the family', async () => {
    const r = await post({
      model,
      state: { invoice: 42, paid_on: '2026-11-20', method: 'card' },
      questions: {
        paid: { type: 'noul', instructions: 'Was the invoice paid?' },
        channel: {
          type: 'choice',
          instructions: 'How was it paid?',
          criteria: { card: 'a card', transfer: null, cash: null },
        },
        punctuality: { type: 'score', instructions: 'How punctual?', criteria: LEVELS },
      },
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as {
      answers: Record<string, Record<string, unknown>>;
      usage: { input_tokens: number };
    };
    const paid = body.answers.paid!.noul as number;
    expect(paid).toBeGreaterThan(0);
    expect(paid).toBeLessThan(1);
    const probs = body.answers.channel!.probabilities as Record<string, number>;
    expect(Object.keys(probs)).toEqual(['card', 'transfer', 'cash']);
    expect(Object.values(probs).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
    expect(Object.keys(body.answers.punctuality!.probabilities as object)).toHaveLength(6);
    expect(body.usage.input_tokens).toBeGreaterThan(0);
  });

  it('refuses a choice past the head with a 422 naming the limit', async () => {
    const criteria = Object.fromEntries(Array.from({ length: m.tooMany }, (_, i) => [`o${i}`, null]));
    const r = await post({ model, state: 's', questions: { q: { type: 'choice', instructions: 'which?', criteria } } });
    expect(r.status).toBe(422);
    expect(await r.text()).toMatch(m.limit);
  });

  it('/metrics names the family, with no prefix reuse', async () => {
    const text = await (await fetch(`${base}/metrics`, { headers: auth() })).text();
    expect(text).toContain(`assay_model_family{model="${model}",family="${m.family}",prefix_reuse="false"} 1`);
  });
});
