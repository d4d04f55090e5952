// The engine runs in a thread of its own: onnxruntime-node's passes are synchronous, so on the
// caller's thread each pass would stall its event loop (the server's /healthz, /metrics, every
// other caller) for the pass's whole duration.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AbortedError,
  BudgetError,
  EngineDeadError,
  EngineError,
  loadEvaluator,
  ModelLoadError,
  OverloadedError,
  type Evaluator,
} from '../../src/engine/index.js';
import type { EngineThreadEvaluator } from '../../src/engine/thread/engine-thread.js';
import { choice, noul, request, score, tinyFp32 } from './fixtures.js';

// The engine threads these tests start get the crash hook they kill them with (engine/thread/crash-hook.ts).
process.env.ASSAY_ENGINE_CRASH_HOOK = '1';

/** A state of about 4,000 tokens. */
const LONG = Array.from({ length: 300 }, (_, i) => `Row ${i}: value ${i * 13} in zone ${i % 17}.`).join('\n');
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the engine thread', () => {
  const open: Evaluator[] = [];
  afterAll(async () => {
    await Promise.all(open.map((e) => e.close()));
  });

  // How much the thread spares the caller's event loop is measured in the bench (section 5, the
  // caller's event loop; section 7, the server's), not asserted here.
  it('answers as the engine on the calling thread does', async () => {
    const modelDir = await tinyFp32();
    const threaded = await loadEvaluator({ modelDir, threads: 1 });
    const inline = await loadEvaluator({ modelDir, threads: 1, engineThread: false });
    open.push(threaded, inline);
    const r = request({ n: noul, c: choice, s: score }, LONG);
    expect(await threaded.evaluate(r)).toEqual(await inline.evaluate(r));
    expect(threaded.stats()).toMatchObject({
      passes: inline.stats().passes,
      tokensEvaluated: inline.stats().tokensEvaluated,
      running: 0,
      queueDepth: 0,
    });
  });

  it('keeps a script alive while a request waits on it, and not after: an unclosed evaluator lets it end', () => {
    const script = `import { loadEvaluator } from ${JSON.stringify(join(ROOT, 'src/engine/index.ts'))};
const e = await loadEvaluator({ modelDir: process.argv[2], threads: 1 });
const { answers } = await e.evaluate({ state: 'The app crashes.', questions: { n: { type: 'noul' } } });
console.log(answers.n.type);`;
    const file = join(mkdtempSync(join(tmpdir(), 'assay-thread-')), 'unclosed.mjs');
    writeFileSync(file, script);
    return tinyFp32().then((modelDir) => {
      // exits by itself (execFileSync would time out otherwise), with the answer printed first
      const out = execFileSync(process.execPath, ['--import', 'tsx', file, modelDir], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(out.trim().split('\n').at(-1)).toBe('noul');
    });
  });

  it("rebuilds the engine's errors as their own classes, with their fields", async () => {
    const e = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1, requestTokenBudget: 50 });
    const one = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1, maxQueue: 0 });
    open.push(e, one);
    const budget = await e.evaluate(request({ n: noul }, LONG)).catch((error: unknown) => error);
    expect(budget).toBeInstanceOf(BudgetError);
    expect((budget as BudgetError).limit).toBe(50);
    const controller = new AbortController();
    controller.abort();
    await expect(e.evaluate(request({ n: noul }, 'short'), { signal: controller.signal })).rejects.toBeInstanceOf(
      AbortedError,
    );
    // maxQueue 0: a second request while one runs is refused.
    const results = await Promise.allSettled([
      one.evaluate(request({ n: noul }, LONG)),
      one.evaluate(request({ n: noul }, 'two')),
    ]);
    const refused = results.find((r) => r.status === 'rejected');
    expect(refused && refused.status === 'rejected' ? refused.reason : undefined).toBeInstanceOf(OverloadedError);
    await expect(loadEvaluator({ modelDir: '/nonexistent/model' })).rejects.toBeInstanceOf(ModelLoadError);
  });

  it.each(['exit', 'throw'] as const)(
    'a thread that dies (%s) ends every waiting request with EngineDeadError and tells its owner once',
    async (how) => {
      const deaths: Error[] = [];
      const e = (await loadEvaluator({
        modelDir: await tinyFp32(),
        threads: 1,
        onDeath: (err) => deaths.push(err),
      })) as EngineThreadEvaluator;
      const waiting = Array.from({ length: 3 }, () =>
        e.evaluate(request({ n: noul, c: choice, s: score }, 'A long text. '.repeat(300))).then(
          () => 'answered',
          (err: Error) => err,
        ),
      );
      e.crashForTest(how);
      const outcomes = await Promise.all(waiting);
      expect(outcomes.some((o) => o instanceof EngineDeadError)).toBe(true);
      expect(outcomes.every((o) => o === 'answered' || o instanceof EngineDeadError)).toBe(true);
      await expect(e.evaluate(request({ n: noul }))).rejects.toBeInstanceOf(EngineDeadError);
      expect(deaths).toHaveLength(1);
      expect(deaths[0]).toBeInstanceOf(EngineDeadError);
      await e.close();
    },
  );

  it('closing is not a death: no EngineDeadError, no owner told', async () => {
    const deaths: Error[] = [];
    const e = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1, onDeath: (err) => deaths.push(err) });
    await e.close();
    await expect(e.evaluate(request({ n: noul }))).rejects.toBeInstanceOf(EngineError);
    expect(deaths).toEqual([]);
  });
});
