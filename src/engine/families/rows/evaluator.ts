// The evaluator of a row family (family.ts): a request becomes rows (the family's layout, in the
// planner threads: planner.ts), the runner runs them in the request's turn of the scheduler
// (requests interleave pass by pass) and counts what they read, and each question's calibrated
// option probabilities become its answer through the engine's shared answer code
// (execution/answers.ts), as a decoder's do. The engine thread only schedules, runs and reads out.
import { BudgetError } from '../../errors.js';
import { answerQuestions, type AnswerTemperatures } from '../../execution/answers.js';
import { PassCount } from '../../execution/passes.js';
import { Scheduler } from '../../execution/scheduler.js';
import type { Planner } from '../../prompting/planner/lanes.js';
import type { ResolvedEngineConfig } from '../../config.js';
import type {
  EngineStats,
  EvaluateNotes,
  EvaluateOptions,
  EvaluateRequest,
  EvaluateResult,
  Evaluator,
} from '../../types.js';
import type { FamilyPlan, RowOutput, RowReader, RowRunner, RowUsage } from './family.js';

/** A row family loaded: its name, its folder as read on this thread, its graph. */
export interface LoadedRowFamily<P extends FamilyPlan = FamilyPlan> {
  name: string;
  reader: RowReader<P>;
  runner: RowRunner<P>;
}

export class FamilyEvaluator<P extends FamilyPlan = FamilyPlan> implements Evaluator {
  private readonly scheduler: Scheduler;
  private readonly count = new PassCount();

  constructor(
    private readonly config: ResolvedEngineConfig,
    private readonly family: LoadedRowFamily<P>,
    /** Plans requests into the family's rows (its planner threads). */
    private readonly planner: Planner<P>,
    readonly synthetic: boolean,
    /** `assay calibrate`'s temperatures (assay.json), applied as to a decoder's label log-probabilities. */
    private readonly temperatures: AnswerTemperatures = {},
  ) {
    this.scheduler = new Scheduler(config.maxQueue);
  }

  get modelDir(): string {
    return this.config.modelDir;
  }

  get graph(): string {
    return this.family.runner.graph;
  }

  async evaluate(request: EvaluateRequest, options: EvaluateOptions = {}): Promise<EvaluateResult> {
    // The layout refuses what the family cannot read (422) before the request takes a place in the queue.
    return this.run(await this.planner.plan(request, options.signal, options.lane), options);
  }

  /** A request body as bytes: parsed and planned in a planner thread, never on this one. */
  async evaluateBody(body: Uint8Array, options: EvaluateOptions = {}): Promise<EvaluateResult> {
    return this.run(await this.planner.planBody(body, options.signal, options.lane), options);
  }

  private async run(plan: P, options: EvaluateOptions): Promise<EvaluateResult> {
    const read = this.family.runner.usage(plan);
    const budget = this.config.requestTokenBudget;
    if (read.usage.input_tokens > budget) throw new BudgetError('request', read.usage.input_tokens, budget);
    const outputs = await this.scheduler.request(
      (ticket) =>
        this.family.runner.run(
          plan,
          (pass, tokens) => ticket.pass(() => this.count.run(pass, tokens)),
          options.cacheScope,
        ),
      options.signal,
      options.lane,
    );
    return this.answers(plan, outputs, read);
  }

  private answers(plan: P, outputs: readonly RowOutput[], read: RowUsage): EvaluateResult {
    const notes: EvaluateNotes = {};
    const logps = plan.questions.map((q) => {
      const rows = q.rows.map((i) => outputs[i]!);
      if (q.truncated) (notes.truncated ??= Object.create(null) as Record<string, string[]>)[q.key] = q.truncated;
      const act = rows.length === 1 ? rows[0]!.act : undefined;
      if (act) (notes.actLogits ??= Object.create(null) as Record<string, [number, number]>)[q.key] = act;
      return this.family.reader.probabilities(q, rows).map(Math.log);
    });
    // The engine's one answer builder, as for a decoder's labels: `assay calibrate`'s temperature
    // per type, normalized, then the answer and its confidence.
    const answers = answerQuestions(plan.questions, logps, this.temperatures, this.config.confidence);
    const result: EvaluateResult = { answers, usage: read.usage };
    if (read.parts) result.usageParts = read.parts;
    if (notes.truncated || notes.actLogits) result.notes = notes;
    return result;
  }

  stats(): EngineStats {
    const cache = this.family.runner.cacheStats?.() ?? { hits: 0, misses: 0, bytes: 0 };
    return {
      queueDepth: this.scheduler.queueDepth,
      batchQueueDepth: this.scheduler.batchQueueDepth,
      running: this.scheduler.running,
      prefixCacheHits: cache.hits,
      prefixCacheMisses: cache.misses,
      prefixCacheBytes: cache.bytes,
      tokensEvaluated: this.count.tokens,
      passes: this.count.passes,
      family: this.family.name,
      prefixReuse: this.family.runner.prefixReuse ?? false,
    };
  }

  async close(): Promise<void> {
    await this.planner.close();
    await this.scheduler.exclusive(() => this.family.runner.close());
  }
}
