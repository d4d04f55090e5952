// What clients written for the hosted service read and send, over a real socket: the request id
// under the hosted service's header too, GET /health, and bodies sent without a Content-Type.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY, mixedRequest, startListening, type TestServer } from './helpers.js';

let s: TestServer;
let base: string;
beforeAll(async () => {
  ({ base, ...s } = await startListening({ logging: false }));
});
afterAll(() => s.close());

const bearer = { authorization: `Bearer ${KEY}` };
// A Uint8Array body makes fetch send no Content-Type at all (a string body would say text/plain).
const bytes = (text: string) => new TextEncoder().encode(text);

describe('request id', () => {
  it('is sent under x-request-id and x-typesafe-request-id alike, on answers and on errors', async () => {
    const responses = [
      await fetch(`${base}/v1/systemone`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify(mixedRequest()),
      }),
      await fetch(`${base}/v1/systemone`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: '{}',
      }),
      await fetch(`${base}/v1/models`),
      await fetch(`${base}/nowhere`),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 422, 401, 404]);
    for (const r of responses) {
      expect(r.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
      expect(r.headers.get('x-typesafe-request-id')).toBe(r.headers.get('x-request-id'));
    }
    const echoed = await fetch(`${base}/healthz`, { headers: { 'x-request-id': 'client-abc.123' } });
    expect(echoed.headers.get('x-typesafe-request-id')).toBe('client-abc.123');
  });
});

describe('GET /health', () => {
  it('answers as /healthz does', async () => {
    const [health, healthz] = [await fetch(`${base}/health`), await fetch(`${base}/healthz`)];
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual(await healthz.json());
    expect((await fetch(`${base}/health`, { method: 'POST' })).status).toBe(405);
  });
});

describe('a body without Content-Type', () => {
  it('is read as JSON (FastAPI does), inline and past 64 KiB', async () => {
    const small = await fetch(`${base}/v1/systemone`, {
      method: 'POST',
      headers: bearer,
      body: bytes(JSON.stringify(mixedRequest())),
    });
    expect(small.status).toBe(200);
    expect(Object.keys(((await small.json()) as { answers: object }).answers).sort()).toEqual([
      'channel',
      'paid',
      'punctuality',
    ]);
    const large = await fetch(`${base}/v1/systemone`, {
      method: 'POST',
      headers: bearer,
      body: bytes(JSON.stringify(mixedRequest()).replace('{', `{${' '.repeat(70 * 1024)}`)),
    });
    expect(large.status).toBe(200);
  });

  it('an empty Content-Type header counts as none (FastAPI tests it for truth)', async () => {
    const r = await fetch(`${base}/v1/systemone`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': '' },
      body: bytes(JSON.stringify(mixedRequest())),
    });
    expect(r.status).toBe(200);
  });

  it('that is not JSON gets json_invalid, as with application/json', async () => {
    const r = await fetch(`${base}/v1/systemone`, {
      method: 'POST',
      headers: bearer,
      body: bytes('{"state": "x", "model": }'),
    });
    expect(r.status).toBe(422);
    expect(((await r.json()) as { detail: unknown[] }).detail).toEqual([
      {
        type: 'json_invalid',
        loc: ['body', 24],
        msg: 'JSON decode error',
        input: {},
        ctx: { error: 'Expecting value' },
      },
    ]);
  });

  it('other media types stay 415', async () => {
    for (const type of ['text/plain', 'application/xml', 'application/vnd.api+json']) {
      const r = await fetch(`${base}/v1/systemone`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': type },
        body: JSON.stringify(mixedRequest()),
      });
      expect(r.status, type).toBe(415);
      expect(r.headers.get('x-typesafe-request-id')).toMatch(/^req_/);
    }
  });
});
