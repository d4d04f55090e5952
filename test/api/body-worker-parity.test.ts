// Bodies past the inline size are parsed and validated in the body worker and reach the engine as
// bytes: a client cannot tell. The same bodies through a server that parses everything inline and
// one that sends everything to the worker get the same status and the same bytes back (422 detail
// entries, json_invalid offsets, unknown models, budgets) and, when valid, the same answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, startServer, type TestServer } from './helpers.js';

let inline: TestServer;
let worker: TestServer;

beforeAll(async () => {
  inline = await startServer({ logging: false, inlineBodyBytes: Number.MAX_SAFE_INTEGER });
  worker = await startServer({ logging: false, inlineBodyBytes: 0, evaluator: inline.evaluator });
});
afterAll(async () => {
  await worker.app.close();
  await inline.close();
});

const noul = { type: 'noul', instructions: 'Is it paid?' };
const valid = (state: unknown, questions: Record<string, unknown> = { n: noul }) =>
  JSON.stringify({ state, model: 'svc-latest', questions });

const BODIES: Record<string, string> = {
  'truncated JSON': '{"state": "x", "model": "svc-latest", "questions": {',
  'trailing comma': '{"state": "x", "model": "svc-latest",}',
  'bad escape': '{"state": "\\q"}',
  'not JSON at all': 'state=x',
  'a JSON array': '[1, 2, 3]',
  'a JSON string': '"hello"',
  null: 'null',
  'empty object': '{}',
  'document instead of state': '{"document": "x", "model": "svc-latest", "questions": {"n": {"type": "noul"}}}',
  'empty questions': valid('x', {}),
  'unknown type': valid('x', { q: { type: 'maybe', instructions: 'x' } }),
  'missing type': valid('x', { q: { instructions: 'x' } }),
  'choice without criteria': valid('x', { q: { type: 'choice', instructions: 'x' } }),
  'score with a null level': valid('x', { q: { type: 'score', criteria: ['a', null] } }),
  '__proto__ keys':
    '{"state": {"__proto__": {"x": 1}}, "model": "svc-latest", "questions": {"__proto__": {"type": "nope"}}}',
  'too deep': `{"state": ${'['.repeat(80)}${']'.repeat(80)}, "model": "svc-latest", "questions": {"n": {"type": "noul"}}}`,
  'unknown model': JSON.stringify({ state: 'x', model: 'svc-nope', questions: { n: noul } }),
  'model not a string': JSON.stringify({ state: 'x', model: 7, questions: { n: noul } }),
  'over the token budget': valid('token '.repeat(70_000)),
  'many small objects, invalid questions': JSON.stringify({
    state: Array.from({ length: 20_000 }, () => ({})),
    model: 'svc-latest',
    questions: { q: 5 },
  }),
  'a valid request': valid(
    { title: 'Ünïcode 日本語 🦊', body: 'The invoice was paid.' },
    { n: noul, c: { type: 'choice', instructions: 'How?', criteria: { card: null, cash: 'in notes' } } },
  ),
  'a valid large request': valid('The invoice was paid late, in cash. '.repeat(3_000), {
    n: noul,
    s: { type: 'score', instructions: 'How late?', criteria: ['on time', 'late', 'very late'] },
  }),
};

describe('the body worker answers as the inline parser does', () => {
  it.each(Object.entries(BODIES))('%s', async (_name, body) => {
    const send = (s: TestServer) =>
      s.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(), payload: body });
    const [a, b] = [await send(inline), await send(worker)];
    expect(b.statusCode).toBe(a.statusCode);
    expect(b.body).toBe(a.body);
    expect(a.statusCode).not.toBe(500);
  });

  it('a valid body past the inline size reaches the engine as bytes (the engine plans it) and is answered', async () => {
    const body = valid('The invoice was paid late, in cash. '.repeat(3_000));
    expect(body.length).toBeGreaterThan(64 * 1024);
    const res = await worker.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(), payload: body });
    expect(res.statusCode).toBe(200);
    expect(res.json().usage.input_tokens).toBeGreaterThan(20_000);
  });
});
