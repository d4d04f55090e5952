// Zero data retention: no request content reaches the logs at any level, whatever the outcome.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AbortedError, BudgetError, EngineError, ModelLoadError, OverloadedError } from '../../src/engine/index.js';
import { ModelUnavailableError } from '../../src/service/errors.js';
import { auth, startServer, withEvaluate, type TestServer } from './helpers.js';

const CANARY = 'CANARY-7f3a9c-zero-retention';

let s: TestServer;
beforeAll(async () => {
  s = await startServer({
    logLevel: 'trace',
    bodyLimit: 32 * 1024,
    // An engine failure whose message quotes the request, as a careless error might.
    wrap: (e) =>
      withEvaluate(e, (req, o, real) =>
        JSON.stringify(req.state).includes('fail')
          ? Promise.reject(new Error(`cannot evaluate ${JSON.stringify(req)}`))
          : real.evaluate(req, o),
      ),
  });
});
afterAll(async () => {
  await s?.close();
});

function request(state: unknown) {
  return {
    state,
    model: 'svc-latest',
    questions: {
      [`key-${CANARY}`]: {
        type: 'noul',
        instructions: `instructions ${CANARY}`,
        criteria: { true: `yes ${CANARY}`, false: `no ${CANARY}` },
      },
      pick: {
        type: 'choice',
        instructions: { text: CANARY },
        criteria: { [`option ${CANARY}`]: `description ${CANARY}`, plain: null },
      },
      rate: { type: 'score', instructions: [CANARY], criteria: [`low ${CANARY}`, { level: CANARY }] },
    },
  };
}

it('never logs state, instructions, criteria or question ids, at trace level, for any outcome', async () => {
  const send = (payload: unknown, headers = auth(), url = '/v1/systemone') =>
    s.app.inject({
      method: 'POST',
      url,
      headers,
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });

  const outcomes = [
    await send(request(`state ${CANARY}`)), // 200
    await send(request({ note: CANARY, nested: [CANARY] })), // 200, object state
    await send({ ...request(`state ${CANARY}`), document: CANARY }), // 422 validation
    await send({ ...request(`state ${CANARY}`), model: CANARY }), // 422 unknown model
    await send(`{"state": "${CANARY}", "model": `), // 422 malformed JSON
    await send(request(`fail ${CANARY}`)), // 500 with the request in the error message
    await send(request(`${CANARY} `.repeat(2000))), // 413
    await send(request(CANARY), { authorization: `Bearer ${CANARY}`, 'content-type': 'application/json' }), // 401
    await send(CANARY, { ...auth(), 'content-type': 'text/plain' }), // 415
    await send(request(CANARY), auth(), `/v1/${CANARY}?q=${CANARY}`), // 404
  ];
  expect(outcomes.map((r) => r.statusCode)).toEqual([200, 200, 422, 422, 422, 500, 413, 401, 415, 404]);
  // the 422 response itself echoes the input (as FastAPI does); only logs must not
  expect(outcomes[2]!.body).toContain(CANARY);

  const log = s.logs.join('');
  expect(log).not.toContain(CANARY);
  expect(log).not.toContain('CANARY');

  // ...while the logs still say what happened: id, route, status, timing, token counts.
  const lines = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request');
  expect(lines.map((l) => l.status)).toEqual([200, 200, 422, 422, 422, 500, 413, 401, 415, 404]);
  // The error table's code for each refusal (a stable name to count and alert on).
  expect(lines.map((l) => l.error)).toEqual([
    undefined,
    undefined,
    'invalid_request',
    'invalid_request',
    'invalid_request',
    'internal_error',
    'body_too_large',
    'unauthenticated',
    'unsupported_media_type',
    undefined,
  ]);
  expect(lines[0]).toMatchObject({ route: '/v1/systemone', method: 'POST', model: 'svc-1.13.0', question_count: 3 });
  expect(lines[0]!.input_tokens).toBeGreaterThan(0);
  expect(typeof lines[0]!.ms).toBe('number');
  expect(typeof lines[0]!.reqId).toBe('string');
  expect(lines[9]!.route).toBe('unmatched');
  const failure = s.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed');
  expect(failure?.err?.type).toBe('Error'); // the 500 is logged, by type and stack frames only
  expect(log).not.toMatch(/authorization|Bearer/i);
});

// Every engine error class, raised while the request (with the canary everywhere) is in flight:
// each gets its status from the error table, and the log keeps the type and, for the engine's own
// content-free classes, the message, yet never the request.
const THROWN: Record<string, { error: () => Error; status: number; code: string; logged?: string }> = {
  aborted: { error: () => new AbortedError('deadline passed'), status: 408, code: 'deadline' },
  overloaded: { error: () => new OverloadedError(2), status: 529, code: 'overloaded' },
  budget: { error: () => new BudgetError('request', 70_000, 65_536), status: 422, code: 'token_budget_exceeded' },
  loading: {
    error: () =>
      new ModelUnavailableError(
        'model svc-1.13.0 failed to load: /models/x/model.onnx is truncated; retrying in 4 s',
        4,
        true,
      ),
    status: 503,
    code: 'model_unavailable',
    logged: 'model.onnx is truncated',
  },
  load: {
    error: () => new ModelLoadError('/models/x/model.onnx: protobuf parsing failed'),
    status: 503,
    code: 'model_load_failed',
    logged: 'protobuf parsing failed',
  },
  engine: {
    error: () =>
      new EngineError(
        'onnxruntime failed a pass of 12 tokens: Non-zero status code returned while running MatMul node',
      ),
    status: 500,
    code: 'engine_failure',
    logged: 'Non-zero status code',
  },
};

it('logs each engine error class by type (and its content-free message), never the request', async () => {
  const t = await startServer({
    logLevel: 'trace',
    wrap: (e) =>
      withEvaluate(e, (req) => {
        const kind = String(req.state).split(' ')[0]!;
        return Promise.reject(THROWN[kind]!.error());
      }),
  });
  try {
    for (const [kind, { status, code, logged }] of Object.entries(THROWN)) {
      const before = t.logs.length;
      const r = await t.app.inject({
        method: 'POST',
        url: '/v1/systemone',
        headers: auth(),
        payload: JSON.stringify(request(`${kind} ${CANARY}`)),
      });
      expect(r.statusCode, kind).toBe(status);
      expect(r.body, kind).not.toContain(CANARY);
      const lines = t.logs.slice(before);
      expect(lines.join(''), kind).not.toContain('CANARY');
      expect(lines.map((l) => JSON.parse(l).status).filter(Boolean), kind).toEqual([status]);
      expect(lines.map((l) => JSON.parse(l).error).filter(Boolean), kind).toEqual([code]);
      if (logged) {
        const err = lines.map((l) => JSON.parse(l)).find((l) => l.err)?.err;
        expect(err, kind).toMatchObject({ type: THROWN[kind]!.error().name, message: expect.stringContaining(logged) });
        expect(err.frames, kind).toMatch(/\bat /);
      }
    }
  } finally {
    await t.close();
  }
});

it('an engine answer that breaks the response contract: 500, logged under its own code with its content-free message', async () => {
  const t = await startServer({
    logLevel: 'trace',
    // The engine answers one question fewer than were asked.
    wrap: (e) =>
      withEvaluate(e, async (req, o, real) => {
        const res = await real.evaluate(req, o);
        const [first] = Object.keys(res.answers);
        delete (res.answers as Record<string, unknown>)[first!];
        return res;
      }),
  });
  try {
    const r = await t.app.inject({
      method: 'POST',
      url: '/v1/systemone',
      headers: auth(),
      payload: JSON.stringify(request(`state ${CANARY}`)),
    });
    expect(r.statusCode).toBe(500);
    expect(r.json()).toEqual({
      detail: `Internal Server Error (response_contract, request ${r.headers['x-request-id']}): the server's log holds the cause`,
    });
    const lines = t.logs.map((l) => JSON.parse(l) as Record<string, any>);
    expect(lines.find((l) => l.msg === 'request')?.error).toBe('response_contract');
    expect(lines.find((l) => l.err)?.err).toMatchObject({
      type: 'ResponseContractError',
      message: 'engine result violates the response contract: answered 2 of 3 questions',
    });
    expect(t.logs.join('')).not.toContain('CANARY');
  } finally {
    await t.close();
  }
});
