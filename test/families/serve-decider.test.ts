// A decider-labels folder (the replica: a causal-LM export with decision.json and calibration.json)
// and a label-tokens folder (the same LM under the generic test contract's decision.json), each
// registered with its path only (the family detected from decision.json's layout), served by
// `assay serve` as users start it (bin/assay.js over dist/) and called over a real socket: plain
// HTTP and the official TypeScript SDK (pinned, unchanged). The three question types answer; a
// refusal is a 422 naming the limit; /metrics says the family reuses the prefix, and a second
// request on the same state takes the context's KV from the prefix cache.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { choice, noul, score, TypeSafeClient } from '@typesafe-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDeciderReplica } from '../../tools/families/decider/replica.js';
import { ensureLabelTokensReplica } from '../../tools/families/label-tokens/replica.js';
import { startServe, type ServeProcess } from '../serve-process.js';

const KEY = 'decider-key';
const MODEL = 'decider-1';
const LABEL_TOKENS = 'label-tokens-1';
const work = mkdtempSync(join(tmpdir(), 'assay-serve-decider-'));
let server: ServeProcess;

beforeAll(async () => {
  const path = await ensureDeciderReplica();
  const registry = join(work, 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: MODEL,
      models: {
        [MODEL]: { path, description: 'decider-labels replica', release_date: '2026-11-27' },
        [LABEL_TOKENS]: {
          path: await ensureLabelTokensReplica('generic'),
          description: 'label-tokens replica (generic contract)',
          release_date: '2026-11-27',
        },
      },
      aliases: {},
    }),
  );
  server = await startServe(registry, ['--preload', `${MODEL},${LABEL_TOKENS}`], { ASSAY_API_KEYS: KEY });
}, 180_000);
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

const auth = { authorization: `Bearer ${KEY}` };
const post = (body: unknown) =>
  fetch(`${server.base}/v1/systemone`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const metrics = async () => (await fetch(`${server.base}/metrics`, { headers: auth })).text();
/** A counter's value for a model in the /metrics text. */
const counter = (text: string, name: string, model: string) =>
  Number(new RegExp(`^${name}\\{[^}]*model="${model}"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 'NaN');

const questions = {
  paid: noul('Was the invoice paid?', { true: 'paid', false: 'unpaid' }),
  channel: choice('How was it paid?', { card: 'a card', transfer: 'a bank transfer', cash: null }),
  punctuality: score('How punctual?', ['late', 'on the day', 'early']),
};

describe.each([
  [MODEL, 'decider-labels'],
  [LABEL_TOKENS, 'label-tokens'],
])('%s (a %s folder, as published)', (MODEL, family) => {
  it('the official SDK gets the three question types, in the contract', async () => {
    const c = new TypeSafeClient({ apiKey: KEY, baseURL: server.base, defaultModel: MODEL, logLevel: 'off' });
    const r = await c.systemOne({ state: { invoice: 42, paid_on: '2026-11-20', method: 'card' }, questions });
    expect(r.model).toBe(MODEL);
    expect(r.answers.paid.noul).toBeGreaterThan(0);
    expect(r.answers.paid.noul).toBeLessThan(1);
    expect(Object.keys(r.answers.channel.probabilities)).toEqual(['card', 'transfer', 'cash']);
    const sum = Object.values(r.answers.channel.probabilities).reduce((a, b) => a + b, 0);
    expect(sum).toBeCloseTo(1, 12);
    expect(Object.keys(r.answers.punctuality.legend)).toEqual(['0', '1', '2']);
    expect(r.usage.input_tokens).toBeGreaterThan(0);
  });

  it('/metrics names its family and that it reuses the prefix; a second request on the same state hits the cache', async () => {
    expect(await metrics()).toContain(`assay_model_family{model="${MODEL}",family="${family}",prefix_reuse="true"} 1`);
    const body = { model: MODEL, state: `A ticket about invoice ${Date.now()}, paid late by card.`, questions };
    expect((await post(body)).status).toBe(200);
    const before = counter(await metrics(), 'assay_prefix_cache_hits_total', MODEL);
    const res = await post(body);
    expect(res.status).toBe(200);
    expect(counter(await metrics(), 'assay_prefix_cache_hits_total', MODEL)).toBeGreaterThan(before);
  });

  it('a choice of one option or of more than the labels: 422 naming the limit', async () => {
    const res = await post({
      model: MODEL,
      state: 's',
      questions: { one: { type: 'choice', instructions: 'Which?', criteria: { only: null } } },
    });
    expect(res.status).toBe(422);
    expect(JSON.stringify(await res.json())).toMatch(/2 to 255 options/);
  });

  it('/admin/models says its family', async () => {
    const res = await fetch(`${server.base}/admin/models`, { headers: auth });
    expect(res.status).toBe(200);
    const { models } = (await res.json()) as { models: Array<{ model: string; family: string | null }> };
    expect(models.find((m) => m.model === MODEL)?.family).toBe(family);
  });
});
