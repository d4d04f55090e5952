// Encoder-family folders as published, registered with their path only (the family detected from
// the files), served by `assay serve` as users start it (bin/assay.js over dist/) and called over a
// real socket: plain HTTP and the official TypeScript SDK (pinned, unchanged). The three question
// types answer; truncation by the family's design is a header and an access-log field; Laya's
// act_logits come only when asked for; a family's refusal is a 422 naming the limit; /metrics says
// each model's family and that it reuses no prefix.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { choice, noul, score, TypeSafeClient } from '@typesafe-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureLayaReplica } from '../../tools/families/laya/replica.js';
import { ensureNliReplica } from '../../tools/families/nli/replica.js';
import { startServe, type ServeProcess } from '../serve-process.js';

const KEY = 'family-key';
const work = mkdtempSync(join(tmpdir(), 'assay-serve-families-'));
let server: ServeProcess;

const MODELS: Record<string, { path: string; family: string }> = {
  'laya-1': { path: ensureLayaReplica(), family: 'laya-markers' },
  'nli-deberta-1': { path: ensureNliReplica('deberta'), family: 'nli-pairs' },
  'nli-modernbert-1': { path: ensureNliReplica('modernbert'), family: 'nli-pairs' },
};

beforeAll(async () => {
  const registry = join(work, 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: 'laya-1',
      models: Object.fromEntries(
        Object.entries(MODELS).map(([id, m]) => [
          id,
          { path: m.path, description: `${m.family} replica`, release_date: '2026-11-27' },
        ]),
      ),
      aliases: {},
    }),
  );
  server = await startServe(registry, ['--preload', Object.keys(MODELS).join(',')], { ASSAY_API_KEYS: KEY });
}, 180_000);
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

async function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.base}/v1/systemone`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const questions = {
  paid: noul('Was the invoice paid?', { true: 'paid', false: 'unpaid' }),
  channel: choice('How was it paid?', { card: 'a card', transfer: 'a bank transfer', cash: null }),
  punctuality: score('How punctual?', ['late', 'on the day', 'early']),
};

describe.each(Object.entries(MODELS))('%s (%s folder, as published)', (model, { family }) => {
  it('the official SDK gets the three question types, in the contract, from the family', async () => {
    const c = new TypeSafeClient({ apiKey: KEY, baseURL: server.base, defaultModel: model, logLevel: 'off' });
    const r = await c.systemOne({ state: { invoice: 42, paid_on: '2026-11-20', method: 'card' }, questions });
    expect(r.model).toBe(model);
    expect(r.answers.paid.noul).toBeGreaterThan(0);
    expect(r.answers.paid.noul).toBeLessThan(1);
    expect(Object.keys(r.answers.channel.probabilities)).toEqual(['card', 'transfer', 'cash']);
    const sum = Object.values(r.answers.channel.probabilities).reduce((a, b) => a + b, 0);
    expect(sum).toBeCloseTo(1, 12);
    expect(Object.keys(r.answers.punctuality.legend)).toEqual(['0', '1', '2']);
    expect(r.usage.input_tokens).toBeGreaterThan(0);
    expect(r.usage.output_tokens).toBe(0);
  });

  it('/metrics names its family; an encoder reuses no prefix', async () => {
    const text = await (await fetch(`${server.base}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text();
    expect(text).toContain(`assay_model_family{model="${model}",family="${family}",prefix_reuse="false"} 1`);
  });
});

describe('laya-1: what the Laya family says beside the answers', () => {
  it('a state past max_len is cut as the reference cuts it: Assay-Truncated and the access log say so', async () => {
    const res = await post({
      model: 'laya-1',
      state: 'word '.repeat(3000),
      questions: {
        a: { type: 'noul', instructions: 'Is it long?' },
        b: { type: 'noul', instructions: 'Is it short?' },
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('assay-truncated')).toBe('state=2');
    await expect.poll(() => server.out()).toMatch(/"truncated":"state=2"/);
    // Not asked for: no act_logits.
    expect(res.headers.get('assay-act-logits')).toBeNull();
  });

  it('Assay-Act-Logits: 1 returns the act head per question id (ASCII JSON), never in the body', async () => {
    const res = await post(
      { model: 'laya-1', state: 'short', questions: { é: { type: 'noul', instructions: 'Yes?' } } },
      { 'assay-act-logits': '1' },
    );
    expect(res.status).toBe(200);
    const act = JSON.parse(res.headers.get('assay-act-logits')!) as Record<string, number[]>;
    expect(Object.keys(act)).toEqual(['é']);
    expect(act['é']).toHaveLength(2);
    const body = (await res.json()) as { answers: Record<string, object> };
    expect(Object.keys(body.answers['é']!)).toEqual(['type', 'noul']);
    expect(res.headers.get('assay-truncated')).toBeNull();
  });

  it('options that cannot all fit a row: 422 naming the limit (the reference refuses it too)', async () => {
    // 255 options keep 4 tokens each (1,020) and the instructions at least 8: the last markers fall past 1,024.
    const criteria = Object.fromEntries(
      Array.from({ length: 255 }, (_, i) => [`option ${i}`, `the option numbered ${i}`]),
    );
    const res = await post({
      model: 'laya-1',
      state: 's',
      questions: {
        many: { type: 'choice', instructions: 'Which one of these many options fits the state best?', criteria },
      },
    });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: Array<{ msg: string }> | string };
    expect(JSON.stringify(body)).toMatch(/reads at most 1024 tokens a question and its options share 192/);
  });
});
