// The engine runs in a thread of its own: onnxruntime-node's passes are synchronous, so on the
// caller's thread each pass would stall its event loop (the server's /healthz, /metrics, every
// other caller) for the pass's whole duration.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { AbortedError, BudgetError, loadEvaluator, ModelLoadError, OverloadedError, type Evaluator } from '../../src/engine/index.js';
import { noul, request, tinyFp32 } from './fixtures.js';

/** A state of about 4,000 tokens, run as one pass (prefillChunk 4,096). */
const LONG = Array.from({ length: 300 }, (_, i) => `Row ${i}: value ${i * 13} in zone ${i % 17}.`).join('\n');

describe('the engine thread', () => {
  const open: Evaluator[] = [];
  afterAll(async () => {
    await Promise.all(open.map((e) => e.close()));
  });
  const load = async (engineThread: boolean) => {
    const e = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1, prefillChunk: 4096, engineThread });
    open.push(e);
    return e;
  };
  /** The request's duration and the longest stall of this thread's event loop while it ran. */
  const stallDuring = async (e: Evaluator) => {
    await e.evaluate(request({ n: noul }, LONG.slice(0, 200))); // warm
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const started = performance.now();
    const result = await e.evaluate(request({ n: noul }, LONG));
    const ms = performance.now() - started;
    h.disable();
    return { ms, stall: h.max / 1e6, result };
  };

  it('keeps the caller\'s event loop free while a long pass runs, and answers as the engine on the calling thread does', async () => {
    const threaded = await stallDuring(await load(true));
    const inline = await stallDuring(await load(false));
    // Not a speed check: each bound compares the loop's longest stall with the same request's own
    // duration, so it holds on a slow or busy machine alike. On the calling thread the one long
    // pass blocks the loop for most of the request.
    expect(inline.stall).toBeGreaterThan(inline.ms / 2);
    // In the engine thread the loop never waits for a pass.
    expect(threaded.stall).toBeLessThan(threaded.ms / 4);
    expect(threaded.result).toEqual(inline.result);
  });

  it('rebuilds the engine\'s errors as their own classes, with their fields', async () => {
    const e = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1, requestTokenBudget: 50 });
    const one = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1, maxQueue: 0 });
    open.push(e, one);
    const budget = await e.evaluate(request({ n: noul }, LONG)).catch((error: unknown) => error);
    expect(budget).toBeInstanceOf(BudgetError);
    expect((budget as BudgetError).limit).toBe(50);
    const controller = new AbortController();
    controller.abort();
    await expect(e.evaluate(request({ n: noul }, 'short'), { signal: controller.signal })).rejects.toBeInstanceOf(AbortedError);
    // maxQueue 0: a second request while one runs is refused.
    const results = await Promise.allSettled([one.evaluate(request({ n: noul }, LONG)), one.evaluate(request({ n: noul }, 'two'))]);
    const refused = results.find((r) => r.status === 'rejected');
    expect(refused && refused.status === 'rejected' ? refused.reason : undefined).toBeInstanceOf(OverloadedError);
    await expect(loadEvaluator({ modelDir: '/nonexistent/model' })).rejects.toBeInstanceOf(ModelLoadError);
  });
});
