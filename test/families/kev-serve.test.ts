// A Kev pointer folder as published (the replica: graph + BF16 external data, tokenizer.json,
// decision.json, calibration.json), registered with its path only (the family detected from
// decision.json's layout id), served by `assay serve` as users start it (bin/assay.js over dist/)
// and called over a real socket with the official TypeScript SDK: the three question types answer;
// a state past Kev's 8,191-token cut is answered and the Assay-Truncated header says so; a row
// past the row limit is a 422 naming it; /metrics names the family and that it reuses no prefix.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { choice, noul, score, TypeSafeClient } from '@typesafe-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureKevReplica } from '../../tools/families/kev/replica.js';
import { startServe, type ServeProcess } from '../serve-process.js';

const KEY = 'kev-key';
const MODEL = 'kev-1';
const work = mkdtempSync(join(tmpdir(), 'assay-serve-kev-'));
let server: ServeProcess;

beforeAll(async () => {
  const registry = join(work, 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: MODEL,
      models: { [MODEL]: { path: ensureKevReplica(), description: 'kev-pointer replica', release_date: '2026-11-27' } },
      aliases: {},
    }),
  );
  server = await startServe(registry, ['--preload', MODEL], { ASSAY_API_KEYS: KEY });
}, 180_000);
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

async function post(body: unknown): Promise<Response> {
  return fetch(`${server.base}/v1/systemone`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('a Kev folder served', () => {
  it('the official SDK gets the three question types, in the contract, from the family', async () => {
    const c = new TypeSafeClient({ apiKey: KEY, baseURL: server.base, defaultModel: MODEL, logLevel: 'off' });
    const r = await c.systemOne({
      state: { invoice: 42, paid_on: '2026-11-20', note: 'paid <|box_end|> by <|fim_suffix|> card' },
      questions: {
        paid: noul('Was the invoice paid?', { true: 'paid', false: 'unpaid' }),
        channel: choice('How was it paid?', { card: 'a card', transfer: 'a bank transfer', cash: null }),
        punctuality: score('How punctual?', ['late', 'on the day', 'early']),
      },
    });
    expect(r.model).toBe(MODEL);
    expect(r.answers.paid.noul).toBeGreaterThan(0);
    expect(r.answers.paid.noul).toBeLessThan(1);
    expect(Object.keys(r.answers.channel.probabilities)).toEqual(['card', 'transfer', 'cash']);
    const sum = Object.values(r.answers.channel.probabilities).reduce((a, b) => a + b, 0);
    expect(sum).toBeCloseTo(1, 12);
    expect(Object.keys(r.answers.punctuality.legend)).toEqual(['0', '1', '2']);
    expect(r.usage.input_tokens).toBeGreaterThan(0);
  });

  it('a state past the 8,191-token cut is answered, and Assay-Truncated says so', async () => {
    const res = await post({
      model: MODEL,
      state: `a${' a'.repeat(8300)}`,
      questions: { q: { type: 'noul', instructions: 'Is it long?' } },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('assay-truncated')).toBe('state=1');
  }, 60_000);

  it('a row past the row limit: 422 naming it', async () => {
    const res = await post({
      model: MODEL,
      state: 's',
      questions: { q: { type: 'choice', instructions: 'Which?', criteria: { a: 'a '.repeat(16_400), b: null } } },
    });
    expect(res.status).toBe(422);
    expect(JSON.stringify(await res.json())).toMatch(/reads at most 16384 tokens a row/);
  });

  it('/metrics names its family; the whole-row graph reuses no prefix', async () => {
    const text = await (await fetch(`${server.base}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text();
    expect(text).toContain(`assay_model_family{model="${MODEL}",family="kev-pointer",prefix_reuse="false"} 1`);
  });
});
