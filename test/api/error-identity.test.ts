// Errors carry their identity: every error class the API answers has a stable code and a log
// policy on the class, and a row in the error table under that code. The policy decides what a
// log line keeps: a content-free message is logged, one that could quote the request never is.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as apiErrors from '../../src/api/api-error.js';
import { ERROR_TABLE, errorResponse, type ErrorClass } from '../../src/api/error-table.js';
import * as engineErrors from '../../src/engine/errors.js';
import * as protocol from '../../src/protocol/index.js';
import * as service from '../../src/service/index.js';
import { auth, startServer, withEvaluate, mixedRequest, type TestServer } from './helpers.js';

/** Error classes that never reach the API: abstract bases, and the escalation's own (caught inside it). */
const NOT_ANSWERED = new Set<unknown>([engineErrors.CrossingError, apiErrors.ApiError, service.EscalationError]);

const classes = [apiErrors, engineErrors, protocol, service].flatMap((m) =>
  Object.entries(m).filter(
    ([, v]) => typeof v === 'function' && (v as { prototype?: unknown }).prototype instanceof Error,
  ),
) as [string, ErrorClass][];

describe('every error class the API answers', () => {
  it('is found (the listing sees the layers’ classes)', () => {
    expect(classes.map(([n]) => n)).toEqual(
      expect.arrayContaining(['BudgetError', 'ResponseContractError', 'InvalidRequestError', 'DrainingError']),
    );
  });

  it.each(classes.filter(([, c]) => !NOT_ANSWERED.has(c)))(
    '%s has a stable code, a log policy and a row under its code',
    (_name, type) => {
      expect(type.code).toMatch(/^[a-z][a-z_]*$/);
      expect(['message', 'frames', 'none']).toContain(type.log);
      const row = ERROR_TABLE.get(type.code);
      expect(row, type.code).toBeDefined();
      expect(type === row!.type || type.prototype instanceof row!.type).toBe(true);
    },
  );

  it('codes are unique to a class and its subclasses', () => {
    const rooted = classes.filter(([, c]) => !NOT_ANSWERED.has(c)).map(([, c]) => c);
    for (const a of rooted)
      for (const b of rooted)
        if (a !== b && a.code === b.code)
          expect(a.prototype instanceof b || b.prototype instanceof a, `${a.name} and ${b.name}`).toBe(true);
  });
});

describe("an API refusal's code is its class's, never its status's", () => {
  const c = { deadlineMs: 1000, bodyLimit: 1024 };
  it('two 503s: draining and the body worker gone', () => {
    const draining = errorResponse(new apiErrors.DrainingError('The server is shutting down'), c);
    const worker = errorResponse(
      new apiErrors.BodyWorkerUnavailableError('The request body could not be checked; retry', { 'retry-after': '1' }),
      c,
    );
    expect(draining).toEqual({
      code: 'draining',
      status: 503,
      body: { detail: 'The server is shutting down' },
      headers: {},
    });
    expect(worker).toEqual({
      code: 'body_worker_unavailable',
      status: 503,
      body: { detail: 'The request body could not be checked; retry' },
      headers: { 'retry-after': '1' },
    });
  });
});

// Log policy, through the real server: the engine throws, the handler logs by the class's policy.
const CANARY = 'CANARY-e41d-request-content';
const THROWN: Record<string, () => Error> = {
  // 'frames': an error the table does not know, whose message quotes the request.
  content: () => new Error(`cannot evaluate ${CANARY}`),
  // 'message': content-free (codes and counts).
  contract: () => new service.ResponseContractError('answered 2 of 3 questions'),
  // 'none': a ModelUnavailableError (logged) whose subclass says it is not.
  second: () => new service.SecondModelError('Model svc-1.13.0: the second model did not answer (no answer)', 1),
};

let s: TestServer;
beforeAll(async () => {
  s = await startServer({
    wrap: (e) => withEvaluate(e, (req) => Promise.reject(THROWN[String(req.state).split(' ')[0]!]!())),
  });
});
afterAll(async () => {
  await s?.close();
});

async function outcome(kind: string) {
  const before = s.logs.length;
  const r = await s.app.inject({
    method: 'POST',
    url: '/v1/systemone',
    headers: auth(),
    payload: JSON.stringify({ ...mixedRequest(), state: `${kind} ${CANARY}` }),
  });
  const lines = s.logs.slice(before).map((l) => JSON.parse(l) as Record<string, any>);
  return {
    status: r.statusCode,
    lines,
    err: lines.find((l) => l.err)?.err,
    error: lines.find((l) => l.msg === 'request')?.error,
  };
}

describe('log policy', () => {
  it("a content error (policy 'frames') is logged by type and frames: its message never reaches the log", async () => {
    const o = await outcome('content');
    expect(o.status).toBe(500);
    expect(o.error).toBe('internal_error');
    expect(o.err).toMatchObject({ type: 'Error', frames: expect.stringMatching(/\bat /) });
    expect(o.err).not.toHaveProperty('message');
    expect(JSON.stringify(o.lines)).not.toContain(CANARY);
  });

  it("a content-free error (policy 'message') is logged with its message", async () => {
    const o = await outcome('contract');
    expect(o.status).toBe(500);
    expect(o.error).toBe('response_contract');
    expect(o.err).toMatchObject({
      type: 'ResponseContractError',
      message: 'engine result violates the response contract: answered 2 of 3 questions',
    });
  });

  it("a subclass's own policy ('none') wins over its parent's: not logged, its code on the access line", async () => {
    const o = await outcome('second');
    expect(o.status).toBe(503);
    expect(o.error).toBe('model_unavailable');
    expect(o.err).toBeUndefined();
  });
});
