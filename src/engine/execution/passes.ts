// A request's passes. Every forward pass a strategy runs goes through its Passes, and each method does
// the two things every pass needs: it takes the request's turn on the scheduler (requests interleave
// pass by pass, and an aborted request stops at its next pass) and it is counted in the engine's
// totals (passes, tokens evaluated). A strategy is given no other way to run a pass, so it cannot
// skip either.
import type { RequestBatcher } from './batching.js';
import type { Ticket } from './scheduler.js';
import type { ForwardResult, KvCache, ModelRunner, PackedPass, PassStep } from '../model/runner.js';
import type { Lane } from '../types.js';

/** The engine's running totals: passes run and tokens evaluated (EngineStats). */
import type { StageRecorder } from './stages.js';

export class PassCount {
  passes = 0;
  tokens = 0;

  /** Counts one pass of `tokens` tokens and runs it (a PassStep with no turn of its own). */
  readonly run: PassStep = (pass, tokens) => {
    this.tokens += tokens;
    this.passes++;
    return pass();
  };
}

export class Passes {
  /** One pass in this request's turn, counted once the turn comes. */
  private readonly step: PassStep;

  /**
   * @param batcher packs concurrent requests' whole prompts into shared passes (undefined: off); it
   *   counts the passes it runs in `count` too (its run is built with `count.run`)
   * @param lane the request's scheduler lane: a shared pass takes trees of its own lane only
   * @param prefillChunk the base of its prefill pieces (default the runner's)
   */
  constructor(
    private readonly runner: ModelRunner,
    private readonly ticket: Ticket,
    count: PassCount,
    private readonly batcher?: RequestBatcher,
    private readonly lane: Lane = 'interactive',
    private readonly prefillChunk = runner.prefillChunk,
    /** Times each pass when the request is traced (stages.ts). */
    stages?: StageRecorder,
  ) {
    this.step = stages
      ? <T>(pass: () => Promise<T>, tokens: number) =>
          ticket.pass(() => stages.time('engine_pass', () => count.run(pass, tokens), tokens))
      : (pass, tokens) => ticket.pass(() => count.run(pass, tokens));
  }

  /** `ids` after `past` (ModelRunner.forward): each prefill piece is a pass, in its own turn. */
  forward(ids: number[], past: KvCache | null, candidates: number[][], present: boolean): Promise<ForwardResult> {
    return this.runner.forward(ids, past, candidates, present, this.step, this.prefillChunk);
  }

  /** One packed pass after `past` (ModelRunner.packed). */
  packed(pass: PackedPass, past: KvCache | null): Promise<number[][]> {
    return this.runner.packed(pass, past, this.step);
  }

  /** One packed pass after `past` that reads nothing and returns its present KV (ModelRunner.packedPresent). */
  packedPresent(pass: PackedPass, past: KvCache | null): Promise<KvCache> {
    return this.runner.packedPresent(pass, past, this.step);
  }

  /**
   * A whole prompt as one packed pass with no past. With the batcher on, it shares the pass with the
   * requests waiting behind it when this request's turn comes (the shared pass is counted once, by
   * the batcher), or finds its rows ready when an earlier request's pass took it along.
   */
  whole(pass: PackedPass): Promise<number[][]> {
    return this.batcher ? this.batcher.submit(pass, (fn) => this.ticket.pass(fn), this.lane) : this.packed(pass, null);
  }
}
