// The metamorphic relations (relations.ts) through the HTTP API: a real server on loopback per
// serving, POST /v1/systemone with JSON bodies, on the fp32, dynamic int8 and 4-bit flavors with the
// default settings. The two scopes are two API keys (the prefix cache is per key by default).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type EngineConfig } from '../../src/engine/index.js';
import { auth, KEY, OTHER_KEY, startServer, type TestServer } from '../api/helpers.js';
import { type Ask, FLAVORS, probabilitiesOf, referenced, RELATIONS, type Servings, TOLERANCE } from './relations.js';
import { tinyFp32 } from '../engine/fixtures.js';

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function serve(modelDir: string, config: Partial<EngineConfig>): Promise<Ask> {
  const evaluator = await loadEvaluator({ modelDir, threads: 1, plannerThreads: 0, ...config });
  const server = await startServer({ evaluator, logLevel: 'warn' });
  servers.push({ ...server, close: async () => (await server.close(), await evaluator.close()) });
  const base = await server.app.listen({ port: 0, host: '127.0.0.1' });
  return async (request, scope) => {
    const response = await fetch(`${base}/v1/systemone`, {
      method: 'POST',
      headers: auth(scope === 'second' ? OTHER_KEY : KEY),
      body: JSON.stringify({ ...request, model: 'svc-latest' }),
    });
    const body = (await response.json()) as {
      answers: Record<string, { noul?: number; probabilities?: Record<string, number> }>;
    };
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${JSON.stringify(body)}`);
    return Object.fromEntries(Object.entries(body.answers).map(([k, a]) => [k, probabilitiesOf(a)]));
  };
}

for (const flavor of FLAVORS) {
  describe(`metamorphic relations through the API, ${flavor.name}`, () => {
    let s: Servings;
    beforeAll(async () => {
      const dir = await flavor.dir();
      s = {
        packed: await serve(dir, { prefixCacheBytes: 0 }),
        unpacked: await serve(dir, { prefixCacheBytes: 0, packQuestions: false }),
        cached: await serve(dir, {}),
      };
      // A quantized flavor's answers are measured against its fp32 twin's too (relations.ts).
      if (flavor.name !== 'fp32') {
        const fp32 = await loadEvaluator({
          modelDir: await tinyFp32(),
          threads: 1,
          plannerThreads: 0,
          prefixCacheBytes: 0,
        });
        servers.push({ close: () => fp32.close() } as TestServer);
        s = referenced(s, async (request) => {
          const result = await fp32.evaluate(request, {});
          return Object.fromEntries(Object.entries(result.answers).map(([k, a]) => [k, probabilitiesOf(a as never)]));
        });
      }
    });
    for (const relation of RELATIONS) {
      it(`${relation.name}: answers equal within ${TOLERANCE}`, async () => {
        expect(await relation.run(s)).toBeLessThan(TOLERANCE);
      });
    }
  });
}
