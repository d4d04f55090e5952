// Answers: shapes and invariants of every type, invariance to question order and ids, and 60
// concurrent requests over a real socket each getting their own answers. Real engine, tiny model.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemOneResponseSchema, type SystemOneResponse } from '../../src/protocol/schemas.js';
import { auth, KEY, MODEL_ID, mixedRequest, startServer, type TestServer } from './helpers.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s?.close();
});

type Req = ReturnType<typeof mixedRequest> | { state: unknown; model: string; questions: Record<string, unknown> };

async function evaluate(body: Req) {
  const res = await s.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(), payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as SystemOneResponse;
}

/** Every invariant the response contract states, checked against the question that was asked. */
function checkAnswers(req: Req, res: SystemOneResponse): void {
  expect(SystemOneResponseSchema.safeParse(res).success).toBe(true);
  expect(res.model).toBe(MODEL_ID);
  expect(Object.keys(res.answers).sort()).toEqual(Object.keys(req.questions).sort());
  expect(Number.isInteger(res.usage.input_tokens) && res.usage.input_tokens > 0).toBe(true);
  expect(Number.isInteger(res.usage.output_tokens) && res.usage.output_tokens >= 0).toBe(true);
  for (const [id, q] of Object.entries(req.questions) as [string, any][]) {
    const a = res.answers[id]!;
    expect(a.type).toBe(q.type);
    if (a.type === 'noul') {
      expect(Object.keys(a).sort()).toEqual(['noul', 'type']); // no confidence on noul
      expect(a.noul).toBeGreaterThanOrEqual(0);
      expect(a.noul).toBeLessThanOrEqual(1);
      continue;
    }
    const expectedKeys =
      a.type === 'choice' ? Object.keys(q.criteria) : q.criteria.map((_: unknown, i: number) => String(i));
    expect(Object.keys(a.probabilities).sort()).toEqual([...expectedKeys].sort());
    const values = Object.values(a.probabilities);
    for (const p of values) {
      expect(p).toBeGreaterThanOrEqual(0);
      expect(p).toBeLessThanOrEqual(1);
    }
    expect(Math.abs(values.reduce((x, y) => x + y, 0) - 1)).toBeLessThan(1e-6);
    expect(a.confidence).toBeGreaterThanOrEqual(0);
    expect(a.confidence).toBeLessThanOrEqual(1);
    if (a.type === 'choice') {
      const best = Math.max(...values);
      expect(a.probabilities[a.choice]).toBe(best);
    } else {
      expect(a.legend).toEqual(Object.fromEntries(q.criteria.map((c: unknown, i: number) => [String(i), c])));
      const mean = Object.entries(a.probabilities).reduce((m, [k, p]) => m + Number(k) * p, 0);
      expect(a.score).toBeCloseTo(mean, 9);
      expect(a.score).toBeGreaterThanOrEqual(0);
      expect(a.score).toBeLessThanOrEqual(q.criteria.length - 1);
    }
  }
}

describe('POST /v1/systemone', () => {
  it('answers all three types in one request, for a string state', async () => {
    const req = mixedRequest();
    checkAnswers(req, await evaluate(req));
  });

  it('answers for an object state and an array state, with structured instructions and criteria', async () => {
    const questions = {
      ...mixedRequest().questions,
      structured: {
        type: 'score',
        instructions: { task: 'rate completeness', scale: 'ordinal' },
        criteria: [{ level: 'none' }, ['partial', 'some fields'], 'complete'],
      },
      objchoice: { type: 'choice', instructions: ['pick', 'one'], criteria: { a: { when: 'first' }, b: ['second'] } },
    };
    for (const state of [
      { invoice: 'INV-1', status: 'paid', amount: 120.5, lines: [1, 2] },
      ['first note', 'second note', { nested: true }],
    ]) {
      const req = { state, model: 'svc-latest', questions };
      checkAnswers(req, await evaluate(req));
    }
  });

  it('reports the versioned id for every accepted name', async () => {
    for (const model of ['svc-latest', 'svc-preview', MODEL_ID]) {
      const res = await evaluate({ ...mixedRequest(), model });
      expect(res.model).toBe(MODEL_ID);
    }
  });

  it('gives identical answers for reordered questions and renamed keys', async () => {
    const req = mixedRequest({ ticket: 'T-77', text: 'Customer asks for a refund of a duplicate charge.' });
    const first = await evaluate(req);
    const q = req.questions;
    const renamed = { state: req.state, model: req.model, questions: { zz: q.punctuality, aa: q.channel, mm: q.paid } };
    const second = await evaluate(renamed);
    expect(second.answers.mm).toEqual(first.answers.paid);
    expect(second.answers.aa).toEqual(first.answers.channel);
    expect(second.answers.zz).toEqual(first.answers.punctuality);
    expect(second.usage).toEqual(first.usage);
    // and asked one at a time, each question gets the same answer again
    const alone = await evaluate({ state: req.state, model: req.model, questions: { only: q.channel } });
    expect(alone.answers.only!.type).toBe('choice');
    expect(Object.keys((alone.answers.only as { probabilities: object }).probabilities).sort()).toEqual([
      'card',
      'cash',
      'transfer',
    ]);
  });

  it('keeps option names exactly, including unicode and spaces', async () => {
    const criteria = { 'Ja, bitte': null, 是: 'yes in Chinese', '  padded  ': null, '🙂': 'an emoji' };
    const req = {
      state: '支払いは済みました。',
      model: 'svc-latest',
      questions: { q: { type: 'choice', instructions: 'Which?', criteria } },
    };
    const res = await evaluate(req);
    checkAnswers(req, res);
  });
});

describe('over a real socket', () => {
  let base: string;
  beforeAll(async () => {
    base = await s.app.listen({ port: 0, host: '127.0.0.1' });
  });

  it('answers 60 concurrent requests with distinct option sets, each with its own answers', async () => {
    const requests = Array.from({ length: 60 }, (_, i) => ({
      state: `Request number ${i}: the parcel ${i % 2 ? 'arrived' : 'was lost'}.`,
      model: 'svc-latest',
      questions: {
        [`pick-${i}`]: {
          type: 'choice',
          instructions: 'What happened?',
          criteria: Object.fromEntries(
            Array.from({ length: 2 + (i % 5) }, (_, j) => [`r${i}-option-${j}`, j % 2 ? null : `case ${j}`]),
          ),
        },
        [`rate-${i}`]: {
          type: 'score',
          instructions: 'How bad?',
          criteria: Array.from({ length: 2 + (i % 9) }, (_, j) => `level ${j} of ${i}`),
        },
        [`ok-${i}`]: { type: 'noul', instructions: 'Did it arrive?' },
      },
    }));
    const responses = await Promise.all(
      requests.map((body, i) =>
        fetch(`${base}/v1/systemone`, {
          method: 'POST',
          headers: { ...auth(KEY), 'x-request-id': `concurrent-${i}` },
          body: JSON.stringify(body),
        }),
      ),
    );
    for (const [i, res] of responses.entries()) {
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toBe(`concurrent-${i}`);
      checkAnswers(requests[i]!, (await res.json()) as SystemOneResponse);
    }
  });
});

describe('GET /v1/models', () => {
  it('lists the aliases with description and release date', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/v1/models', headers: auth() });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      models: [
        { name: 'svc-latest', description: 'tiny synthetic', release_date: '2026-11-22' },
        { name: 'svc-preview', description: 'tiny synthetic', release_date: '2026-11-22' },
      ],
    });
  });
});

describe('operational endpoints', () => {
  it('serves an OpenAPI 3.1 document with the spec operation ids', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe((JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version);
    expect(doc.paths['/v1/systemone'].post.operationId).toBe('systemone_v1_systemone_post');
    expect(doc.paths['/v1/models'].get.operationId).toBe('models_v1_v1_models_get');
    const schemas = doc.components.schemas;
    expect(schemas.SystemOneRequest.required).toEqual(['state', 'model', 'questions']);
    expect(schemas.SystemOneRequest.properties.questions.minProperties).toBe(1);
    expect(schemas.ScoreAnswer.required).toContain('probabilities');
    expect(Object.keys(schemas.NoulAnswer.properties)).not.toContain('confidence');
    expect(schemas.ChoiceQuestion.properties.criteria.maxProperties).toBe(255);
    expect(schemas.HTTPValidationError.properties.detail.items.$ref).toBe('#/components/schemas/ValidationError');
    expect(JSON.stringify(doc)).not.toContain('#/$defs/');
    // Fields a request object does not name are ignored, so the document must not forbid them; the
    // answers hold exactly their fields.
    for (const name of ['SystemOneRequest', 'NoulQuestion', 'NoulCriteria', 'ChoiceQuestion', 'ScoreQuestion'])
      expect(schemas[name].additionalProperties, name).toBeUndefined();
    for (const name of ['SystemOneResponse', 'NoulAnswer', 'ChoiceAnswer', 'ScoreAnswer', 'Usage'])
      expect(schemas[name].additionalProperties, name).toBe(false);
  });

  it('answers /healthz 200 when ready, without a key', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('exports request, latency, token, queue and prefix-cache metrics', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    const text = res.body;
    expect(text).toMatch(/assay_http_requests_total\{method="POST",route="\/v1\/systemone",status="200"\} \d+/);
    expect(text).toContain(
      'assay_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/v1/systemone",status="200"}',
    );
    expect(text).toMatch(new RegExp(`assay_engine_tokens_evaluated_total\\{model="${MODEL_ID}"\\} [1-9]`));
    expect(text).toMatch(new RegExp(`assay_engine_passes_total\\{model="${MODEL_ID}"\\} [1-9]`));
    expect(text).toMatch(new RegExp(`assay_input_tokens_total\\{model="${MODEL_ID}"\\} [1-9]`));
    expect(text).toContain(`assay_engine_queue_depth{model="${MODEL_ID}"} 0`);
    expect(text).toMatch(/assay_prefix_cache_hits_total\{model="svc-1.13.0"\} [1-9]/); // the renamed-keys request reused the prefix
    expect(text).toContain('assay_prefix_cache_misses_total{model="svc-1.13.0"}');
    // no request content in labels: option names and states of the requests above never appear
    expect(text).not.toContain('option-');
    expect(text).not.toContain('parcel');
  });
});
