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
  'document beside state': JSON.stringify({ state: 'x', document: 'x', model: 'svc-latest', questions: { n: noul } }),
  'unknown fields at every level': JSON.stringify({
    state: 'The invoice was paid.',
    model: 'svc-latest',
    user: 'user-7',
    session_id: 's-7',
    provider: { allow_fallbacks: false },
    trace: { trace_id: 't-7' },
    questions: {
      n: { ...noul, weight: 2, criteria: { true: 'paid', false: 'unpaid', maybe: 'partly' } },
      c: { type: 'choice', instructions: 'How?', options: ['a'], criteria: { card: null, cash: null } },
      s: { type: 'score', instructions: 'How late?', scale: 3, criteria: ['on time', 'late'] },
    },
  }),
  'an empty string state': valid(''),
  'an empty object state': valid({}),
  'an empty array state': valid([]),
  'a choice with one option': valid('x', { c: { type: 'choice', instructions: 'How?', criteria: { only: null } } }),
  'a choice with no options': valid('x', { c: { type: 'choice', instructions: 'How?', criteria: {} } }),
  'a choice with 256 options': valid('x', {
    c: { type: 'choice', criteria: Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`o${i}`, null])) },
  }),
  'a score with 11 levels': valid('x', { s: { type: 'score', criteria: Array.from({ length: 11 }, String) } }),
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

/** What the hosted service does with these, so both paths must: answer them, or refuse them. */
const STATUS: Record<string, number> = {
  'document beside state': 422,
  'unknown fields at every level': 200,
  'an empty string state': 200,
  'an empty object state': 200,
  'an empty array state': 200,
  'a choice with one option': 200,
  'a choice with no options': 422,
  'a choice with 256 options': 422,
  'a score with 11 levels': 422,
};

describe('the body worker answers as the inline parser does', () => {
  it.each(Object.entries(BODIES))('%s', async (name, body) => {
    const send = (s: TestServer) =>
      s.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(), payload: body });
    const [a, b] = [await send(inline), await send(worker)];
    expect(b.statusCode).toBe(a.statusCode);
    expect(b.body).toBe(a.body);
    expect(a.statusCode).not.toBe(500);
    if (name in STATUS) expect(a.statusCode, a.body.slice(0, 300)).toBe(STATUS[name]);
  });

  it('a valid body past the inline size reaches the engine as bytes (the engine plans it) and is answered', async () => {
    const body = valid('The invoice was paid late, in cash. '.repeat(3_000));
    expect(body.length).toBeGreaterThan(64 * 1024);
    const res = await worker.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(), payload: body });
    expect(res.statusCode).toBe(200);
    expect(res.json().usage.input_tokens).toBeGreaterThan(20_000);
  });
});
