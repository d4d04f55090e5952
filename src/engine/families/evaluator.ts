// The evaluator of an encoder family (family.ts): a request becomes rows (the family's layout, on
// the engine thread: tokenizing is small next to an encoder pass), the rows run in batches, each
// batch one pass in the request's turn of the scheduler (requests interleave batch by batch), and
// each question's calibrated option probabilities become its answer through the engine's shared
// answer code (execution/answers.ts), as a decoder's do. An encoder reads the state and the options
// as one sequence, so nothing is reused across questions or requests: no prefix cache.
import { BudgetError } from '../errors.js';
import { answerQuestions, type AnswerTemperatures } from '../execution/answers.js';
import { PassCount } from '../execution/passes.js';
import { Scheduler } from '../execution/scheduler.js';
import { parseBody } from '../prompting/planner/task.js';
import type { ResolvedEngineConfig } from '../config.js';
import type {
  EngineStats,
  EvaluateNotes,
  EvaluateOptions,
  EvaluateRequest,
  EvaluateResult,
  Evaluator,
  Usage,
  UsageParts,
} from '../types.js';
import type { RowFamily, FamilyRow, FamilyPlan, RowOutput } from './family.js';

/**
 * The rows of a plan in batches: longest first, each batch at most `batchTokens` padded tokens (its
 * row count × its longest row), at least one row. Sorting by length keeps the padding small; 0 (or a
 * budget under the longest row) runs rows one by one.
 */
export function rowBatches(rows: readonly FamilyRow[], batchTokens: number): number[][] {
  const order = rows.map((_, i) => i).sort((a, b) => rows[b]!.tokens - rows[a]!.tokens || a - b);
  const batches: number[][] = [];
  let batch: number[] = [];
  for (const i of order) {
    const longest = batch.length > 0 ? rows[batch[0]!]!.tokens : rows[i]!.tokens;
    if (batch.length > 0 && (batch.length + 1) * longest > batchTokens) {
      batches.push(batch);
      batch = [];
    }
    batch.push(i);
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/**
 * A row plan's usage per part: every row is one question's (an encoder reads the state again in each
 * row), so nothing is shared and a question's part is its rows' tokens, as when it is asked alone.
 * Undefined if a row were read by no question or by several (the split would not add up).
 */
export function rowUsageParts(plan: FamilyPlan<FamilyRow>): UsageParts | undefined {
  const owners = new Array<number>(plan.rows.length).fill(0);
  // Own keys: a question id may be named like an Object.prototype member.
  const questions = Object.create(null) as Record<string, Usage>;
  for (const q of plan.questions) {
    const part = (questions[q.key] ??= { input_tokens: 0, output_tokens: 0 });
    for (const i of q.rows) {
      owners[i]!++;
      part.input_tokens += plan.rows[i]!.tokens;
    }
  }
  if (owners.some((n) => n !== 1)) return undefined;
  const shared = {
    input_tokens: plan.usage.input_tokens - Object.values(questions).reduce((n, u) => n + u.input_tokens, 0),
    output_tokens: plan.usage.output_tokens,
  };
  return shared.input_tokens === 0 && shared.output_tokens === 0 ? { shared, questions } : undefined;
}

export class FamilyEvaluator implements Evaluator {
  private readonly scheduler: Scheduler;
  private readonly count = new PassCount();

  constructor(
    private readonly config: ResolvedEngineConfig,
    private readonly family: RowFamily,
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
    return this.family.graph;
  }

  async evaluate(request: EvaluateRequest, options: EvaluateOptions = {}): Promise<EvaluateResult> {
    // The layout refuses what the family cannot read (422) before the request takes a place in the queue.
    const plan = this.family.plan(request);
    const budget = this.config.requestTokenBudget;
    if (plan.usage.input_tokens > budget) throw new BudgetError('request', plan.usage.input_tokens, budget);
    const outputs = await this.scheduler.request(
      async (ticket) => {
        const out: RowOutput[] = new Array<RowOutput>(plan.rows.length);
        for (const batch of rowBatches(plan.rows, this.family.rowsAlone ? 0 : this.config.rowBatchTokens)) {
          const rows = batch.map((i) => plan.rows[i]!);
          const tokens = rows.length * rows[0]!.tokens;
          const got = await ticket.pass(() => this.count.run(() => this.family.run(rows), tokens));
          batch.forEach((i, j) => (out[i] = got[j]!));
        }
        return out;
      },
      options.signal,
      options.lane,
    );
    return this.answers(plan, outputs);
  }

  async evaluateBody(body: Uint8Array, options: EvaluateOptions = {}): Promise<EvaluateResult> {
    return this.evaluate(parseBody(body), options);
  }

  private answers(plan: FamilyPlan<FamilyRow>, outputs: readonly RowOutput[]): EvaluateResult {
    const notes: EvaluateNotes = {};
    const logps = plan.questions.map((q) => {
      const rows = q.rows.map((i) => outputs[i]!);
      if (q.truncated) (notes.truncated ??= Object.create(null) as Record<string, string[]>)[q.key] = q.truncated;
      const act = rows.length === 1 ? rows[0]!.act : undefined;
      if (act) (notes.actLogits ??= Object.create(null) as Record<string, [number, number]>)[q.key] = act;
      return this.family.probabilities(q, rows).map(Math.log);
    });
    // The engine's one answer builder, as for a decoder's labels: `assay calibrate`'s temperature
    // per type, normalized, then the answer and its confidence.
    const answers = answerQuestions(plan.questions, logps, this.temperatures, this.config.confidence);
    const result: EvaluateResult = { answers, usage: plan.usage };
    const usageParts = rowUsageParts(plan);
    if (usageParts) result.usageParts = usageParts;
    if (notes.truncated || notes.actLogits) result.notes = notes;
    return result;
  }

  stats(): EngineStats {
    return {
      queueDepth: this.scheduler.queueDepth,
      batchQueueDepth: this.scheduler.batchQueueDepth,
      running: this.scheduler.running,
      prefixCacheHits: 0,
      prefixCacheMisses: 0,
      prefixCacheBytes: 0,
      tokensEvaluated: this.count.tokens,
      passes: this.count.passes,
      family: this.family.name,
    };
  }

  async close(): Promise<void> {
    await this.scheduler.exclusive(() => this.family.close());
  }
}
