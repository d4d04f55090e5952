// A request's Passes (src/engine/execution/passes.ts), on the real tiny model and the real scheduler:
// every method takes the request's turn and counts what it runs, so no strategy can skip either. The
// counts are the engine's stats (passes, tokens evaluated) that operators read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEngineConfig } from '../../src/engine/config.js';
import { RequestBatcher } from '../../src/engine/execution/batching.js';
import { PassCount, Passes } from '../../src/engine/execution/passes.js';
import { Scheduler, type Ticket } from '../../src/engine/execution/scheduler.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { ModelRunner, type PackedPass } from '../../src/engine/model/runner.js';
import { tinyFp32 } from './fixtures.js';

/** A chain of `n` tokens with no past, read at its last token. */
function chain(n: number, first = 5): PackedPass {
  return {
    tokens: Array.from({ length: n }, (_, i) => first + i),
    parents: Array.from({ length: n }, (_, i) => i - 1),
    reads: [{ at: n - 1, candidates: [1, 2, 3] }],
  };
}

/** Runs `work` as one admitted request, counting the turns it takes. */
async function request<T>(scheduler: Scheduler, work: (ticket: Ticket) => Promise<T>): Promise<[T, number]> {
  let turns = 0;
  const result = await scheduler.request((ticket) =>
    work({
      pass: (fn) => {
        turns++;
        return ticket.pass(fn);
      },
    }),
  );
  return [result, turns];
}

describe('Passes: each pass takes the request turn and is counted', () => {
  let runner: ModelRunner;
  beforeAll(async () => {
    const modelDir = await tinyFp32();
    runner = await ModelRunner.load(
      await openModelFolder(modelDir),
      resolveEngineConfig({ modelDir, threads: 1, prefillChunk: 64 }),
    );
  });
  afterAll(async () => {
    await runner.close();
  });

  it('forward: each prefill piece is a turn and a pass, and the tokens add up', async () => {
    const count = new PassCount();
    const ids = chain(200).tokens;
    const [result, turns] = await request(new Scheduler(4), (t) =>
      new Passes(runner, t, count).forward(ids, null, [[1, 2, 3]], false),
    );
    expect(turns).toBeGreaterThan(1); // 200 tokens in pieces of 64 or more
    expect([count.passes, count.tokens]).toEqual([turns, 200]);
    // The pieces answer as one unchunked pass does: fp32 reassociation only, far below the 4-decimal
    // bound (a wrong piece, past or position would move a log-probability by tenths).
    const whole = await runner.forward(ids, null, [[1, 2, 3]], false);
    for (const [i, lp] of whole.logprobs[0]!.entries()) expect(result.logprobs[0]![i]).toBeCloseTo(lp, 4);
  });

  it('packed: one turn, one pass, its tokens', async () => {
    const count = new PassCount();
    const [, turns] = await request(new Scheduler(4), (t) => new Passes(runner, t, count).packed(chain(30), null));
    expect([turns, count.passes, count.tokens]).toEqual([1, 1, 30]);
  });

  it('whole, batcher off: a packed pass of its own', async () => {
    const count = new PassCount();
    const [, turns] = await request(new Scheduler(4), (t) => new Passes(runner, t, count).whole(chain(30)));
    expect([turns, count.passes, count.tokens]).toEqual([1, 1, 30]);
  });

  it('whole, batcher on: requests waiting together share one pass, counted once; each takes its turn', async () => {
    const count = new PassCount();
    const batcher = new RequestBatcher(4096, (pass) => runner.packed(pass, null, count.run));
    const scheduler = new Scheduler(4);
    const passes = [chain(30, 5), chain(20, 40), chain(10, 70)];
    const shared = await Promise.all(
      passes.map((p) => request(scheduler, (t) => new Passes(runner, t, count, batcher).whole(p))),
    );
    expect(shared.map(([, turns]) => turns)).toEqual([1, 1, 1]);
    expect([count.passes, count.tokens]).toEqual([1, 60]);
    // Each request gets the rows of a pass of its own (fp32 reassociation only, as above).
    for (const [i, p] of passes.entries()) {
      const alone = await runner.packed(p, null);
      for (const [j, lp] of alone[0]!.entries()) expect(shared[i]![0][0]![j]).toBeCloseTo(lp, 4);
    }
  });
});
