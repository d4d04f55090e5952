// Hostile input shapes over a real socket: each gets its clear answer (a pinned 422 or an answer,
// never a 500 or a hang). How long /healthz waits meanwhile is a timing: the serving bench measures
// it with these shapes looping (bench/serving.ts, `npm run bench -- --only serving`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestErrors } from '../../src/protocol/validate.js';
import { auth, mixedRequest, startServer, type TestServer } from './helpers.js';

let s: TestServer;
let base: string;
beforeAll(async () => {
  s = await startServer({ logging: false });
  base = await s.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await s?.close();
});

async function post(body: string | object): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}/v1/systemone`, {
    method: 'POST',
    headers: auth(),
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const nested = (depth: number) =>
  `{"state": ${'['.repeat(depth)}"x"${']'.repeat(depth)}, "model": "svc-latest", "questions": {"q": {"type": "noul"}}}`;

describe('hostile inputs', () => {
  it('content nested deeper than 64 levels is a pinned 422 naming where, at any depth', async () => {
    for (const depth of [65, 3_000, 10_000, 1_000_000]) {
      const r = await post(nested(depth));
      expect(r.status, `depth ${depth}`).toBe(422);
      expect(r.json.detail).toEqual([
        {
          type: 'json_too_deep',
          loc: ['body', 'state', ...Array.from({ length: 64 }, () => 0)],
          msg: 'JSON nesting is deeper than 64 levels',
          ctx: { max_depth: 64 },
        },
      ]);
    }
    // 64 levels are fine, in the state, in instructions and in criteria.
    const ok = mixedRequest(JSON.parse(`${'['.repeat(64)}"deep"${']'.repeat(64)}`));
    (ok.questions.paid as Record<string, unknown>).instructions = JSON.parse(
      `${'{"a":'.repeat(63)}"x"${'}'.repeat(63)}`,
    );
    expect((await post(ok)).status).toBe(200);
    const deepCriteria = mixedRequest();
    (deepCriteria.questions.channel.criteria as Record<string, unknown>).cash = JSON.parse(
      `${'['.repeat(65)}1${']'.repeat(65)}`,
    );
    const r = await post(deepCriteria);
    expect(r.status).toBe(422);
    expect(r.json.detail[0].loc.slice(0, 6)).toEqual(['body', 'questions', 'channel', 'criteria', 'cash', 0]);
  });

  it('malformed JSON nested 100,000 and 1,000,000 deep is a json_invalid 422 at the right offset', async () => {
    for (const depth of [100_000, 1_000_000]) {
      const body = `{"state": ${'['.repeat(depth)}x, "model": "svc-latest", "questions": {"q": {"type": "noul"}}}`;
      const r = await post(body);
      expect(r.status).toBe(422);
      expect(r.json.detail).toEqual([
        {
          type: 'json_invalid',
          loc: ['body', 10 + depth],
          msg: 'JSON decode error',
          input: {},
          ctx: { error: 'Expecting value' },
        },
      ]);
    }
  });

  it("assay eval's validation (requestErrors) bounds the nesting too, under a __proto__ key as well", () => {
    const body = JSON.parse(
      `{"state": {"__proto__": ${'['.repeat(100_000)}${']'.repeat(100_000)}}, "model": "m", "questions": {"q": {"type": "noul"}}}`,
    );
    const detail = requestErrors(body);
    expect(detail).toHaveLength(1);
    expect(detail[0]).toMatchObject({ type: 'json_too_deep', ctx: { max_depth: 64 } });
    expect(detail[0]!.loc.slice(0, 4)).toEqual(['body', 'state', '__proto__', 0]);
    expect(detail[0]!.loc).toHaveLength(3 + 63);
  });

  it('300,000 spaces in a state and 400,000 letters are answered or over the budget, never a stall', async () => {
    for (const state of [`Report:${' '.repeat(300_000)}end.`, 'a'.repeat(400_000)]) {
      const r = await post(mixedRequest(state));
      // Over the token budget or answered: either way a clear answer, not a stall.
      expect([200, 422]).toContain(r.status);
      if (r.status === 422) expect(r.json.detail[0].type).toBe('token_budget_exceeded');
    }
  });

  it('200 questions on a 120 KB state are counted against the token budget (in a planner worker)', async () => {
    const state = Array.from({ length: 2_500 }, (_, i) => `Line ${i}: an ordinary sentence about item ${i}.`).join(
      '\n',
    );
    expect(state.length).toBeGreaterThan(100_000);
    const questions = Object.fromEntries(
      Array.from({ length: 200 }, (_, i) => [`q${i}`, { type: 'noul', instructions: `Is item ${i} listed?` }]),
    );
    const r = await post({ state, model: 'svc-latest', questions });
    expect(r.status).toBe(422); // 200 × the state's suffix is far over 64k tokens, counted in a worker
    expect(r.json.detail[0].type).toBe('token_budget_exceeded');
  });
  it('a 6 MB state of 2,000,000 empty arrays and one of 200,000 small objects (body worker) are counted and refused with the token budget', async () => {
    const flat = `{"state": [${'[],'.repeat(1_999_999)}[]], "model": "svc-latest", "questions": {"q": {"type": "noul", "instructions": "Empty?"}}}`;
    const objects = JSON.stringify({
      state: Array.from({ length: 200_000 }, (_, i) => ({ id: i, ok: true })),
      model: 'svc-latest',
      questions: { q: { type: 'noul', instructions: 'All ok?' } },
    });
    expect(flat.length).toBeGreaterThan(6_000_000);
    for (const body of [flat, objects]) {
      const r = await post(body);
      expect(r.status).toBe(422);
      expect(r.json.detail[0].type).toBe('token_budget_exceeded');
    }
    // The same shapes, invalid: the worker's 422 names the field, as the inline parser would.
    const bad = await post(flat.replace('"type": "noul"', '"type": "maybe"'));
    expect(bad.status).toBe(422);
    expect(bad.json.detail[0].loc).toEqual(['body', 'questions', 'q']);
  });
});
