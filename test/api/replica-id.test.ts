// --replica-id names the replica in x-assay-replica, for checking a proxy's routing; without it no
// response says which replica answered (that would tell a caller where its states are cached).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { auth, mixedRequest, startServer, type TestServer } from './helpers.js';

let named: TestServer;
let plain: TestServer;
beforeAll(async () => {
  plain = await startServer({ logging: false });
  named = await startServer({ logging: false, replicaId: 'r7', evaluator: plain.evaluator });
});
afterAll(async () => {
  await named.app.close();
  await plain.close();
});

it('x-assay-replica on every response (answers, errors, /healthz) only when the operator sets it', async () => {
  for (const [s, want] of [
    [named, 'r7'],
    [plain, undefined],
  ] as const) {
    const answered = await s.app.inject({
      method: 'POST',
      url: '/v1/systemone',
      headers: auth(),
      payload: mixedRequest(),
    });
    const refused = await s.app.inject({ method: 'POST', url: '/v1/systemone', payload: mixedRequest() });
    const health = await s.app.inject({ method: 'GET', url: '/healthz' });
    expect([answered.statusCode, refused.statusCode, health.statusCode]).toEqual([200, 401, 200]);
    for (const r of [answered, refused, health]) expect(r.headers['x-assay-replica']).toBe(want);
  }
});
