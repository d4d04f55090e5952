// The evaluator: one loaded model answering requests. Encodes the shared prefix once (or takes it
// from the cross-request cache), then each question as a suffix on that prefix's KV cache.
import { DEFAULTS, type EngineConfig } from '../config.js';
import { AbortedError, ModelLoadError } from '../errors.js';
import { answerQuestions, type AnswerTemperatures } from './answers.js';
import { firstTokens, labelLogProbs } from '../prompting/labels.js';
import { RequestBatcher } from './batching.js';
import { packedTokens, packQuestions } from './packing.js';
import { openModelFolder } from '../model/model-folder.js';
import type { Budgets, Plan, PlannedQuestion } from '../prompting/plan.js';
import { defaultPlannerThreads, inlinePlanner, workerPlanner, type Planner } from '../prompting/planner/index.js';
import { PrefixCache } from '../cache/prefix-cache.js';
import { promptSet } from '../prompting/prompts.js';
import { ModelRunner, prefillEnds, type KvCache } from '../model/runner.js';
import { Scheduler } from './scheduler.js';
import { TextCodec } from '../prompting/tokenizer.js';
import type { Answer, EngineStats, EvaluateOptions, EvaluateRequest, EvaluateResult, Evaluator } from '../types.js';

export async function createEvaluator(config: EngineConfig): Promise<Evaluator> {
  const folder = await openModelFolder(config.modelDir, config.variant);
  const codec = await TextCodec.load(folder.dir);
  if (!codec.hasChatTemplate) {
    throw new ModelLoadError(
      `${folder.dir}: no chat template in tokenizer_config.json, chat_template.jinja or chat_template.json: Assay needs an instruction-tuned (chat) model`,
    );
  }
  const endToken = codec.eosTokenId ?? folder.eosTokenIds[0];
  if (endToken === undefined) throw new ModelLoadError(`${folder.dir}: no eos_token in tokenizer_config.json or generation_config.json`);
  const runner = await ModelRunner.create(folder, config, config.temperature ?? folder.manifest.temperature ?? 1);
  // (A graph left unrewritten has been warned about already, or the operator turned the rewrite off.)
  if (runner.rewritten && !runner.packs && config.packQuestions !== false) {
    const why = !runner.hasPositionIds ? 'the graph takes no position_ids' : 'its attention takes no mask bias (a fused attention kernel)';
    config.onWarning?.(`${folder.onnxPath}: packed evaluation is not available (${why}); questions run one pass per question`);
  }
  const budgets: Budgets = {
    request: config.requestTokenBudget ?? DEFAULTS.requestTokenBudget,
    question: config.questionTokenBudget ?? DEFAULTS.questionTokenBudget,
    context: folder.maxContext,
  };
  const promptVersion = config.promptVersion ?? folder.manifest.prompt_version;
  promptSet(promptVersion); // an unknown prompt_version fails the load, not each request
  const rotations = config.optionRotations ?? folder.manifest.option_rotations ?? 1;
  if (!Number.isInteger(rotations) || rotations < 1) throw new ModelLoadError(`${folder.dir}: option_rotations must be a whole number ≥ 1, got ${rotations}`);
  const temperatures = config.answerTemperatures ?? folder.manifest.answer_temperature ?? {};
  for (const [type, t] of Object.entries(temperatures)) {
    if (!['noul', 'choice', 'score'].includes(type) || typeof t !== 'number' || !(t > 0) || !Number.isFinite(t)) {
      throw new ModelLoadError(`${folder.dir}: answer_temperature.${type} must be a positive number for noul, choice or score, got ${JSON.stringify(t)}`);
    }
  }
  const threads = config.plannerThreads ?? defaultPlannerThreads();
  const planner =
    threads > 0
      ? // Planning is quick next to a request's passes: its queue holds at least 16 (the engine's bound decides 529s).
        workerPlanner({ modelDir: folder.dir, promptVersion, rotations, endToken, budgets, threads, maxQueue: Math.max(16, config.maxQueue ?? DEFAULTS.maxQueue) })
      : inlinePlanner(codec, { promptVersion, rotations, endToken, budgets });
  return new OnnxEvaluator(config, folder.manifest.synthetic === true, `${folder.dir}#${folder.variant}`, runner, planner, temperatures);
}

class OnnxEvaluator implements Evaluator {
  private readonly scheduler: Scheduler;
  private readonly cache: PrefixCache;
  private tokensEvaluated = 0;
  private passes = 0;

  constructor(
    private readonly config: EngineConfig,
    readonly synthetic: boolean,
    private readonly cacheKey: string,
    private readonly runner: ModelRunner,
    private readonly planner: Planner,
    private readonly temperatures: AnswerTemperatures,
  ) {
    this.scheduler = new Scheduler(config.maxQueue ?? DEFAULTS.maxQueue);
    this.cache = new PrefixCache(config.prefixCacheBytes ?? DEFAULTS.prefixCacheBytes);
    this.packs = runner.packs && config.packQuestions !== false;
    this.packTokens = config.packTokens ?? DEFAULTS.packTokens;
    let batchTokens = config.batchTokens ?? DEFAULTS.batchTokens[config.provider ?? 'cpu'];
    if (this.packs && batchTokens > 0 && runner.sharesActivationScales) {
      // One activation scale per pass: a request's answers would move with whatever another
      // caller's tokens put in the same pass. Within a request that is the caller's own business.
      batchTokens = 0;
      config.onWarning?.(
        `${cacheKey}: packing across requests is off: this export quantizes activations at run time with one scale per pass (DynamicQuantizeLinear), so one request's tokens would change another's answers`,
      );
    }
    this.batcher =
      this.packs && batchTokens > 0
        ? new RequestBatcher(batchTokens, (pass) => {
            this.tokensEvaluated += pass.tokens.length;
            this.passes++;
            return this.runner.packed(pass, null);
          })
        : undefined;
  }

  /** Packs concurrent requests' whole prompts into shared passes (undefined: off). */
  private readonly batcher?: RequestBatcher;

  /** Whether a request's questions run packed, one pass per `packTokens` tokens (else one pass per question). */
  readonly packs: boolean;
  private readonly packTokens: number;

  get modelDir(): string {
    return this.config.modelDir;
  }

  get graph(): string {
    return this.runner.graphPath;
  }

  async evaluate(request: EvaluateRequest, options: EvaluateOptions = {}): Promise<EvaluateResult> {
    // Planning throws budget errors before the request takes a place in the queue.
    return this.run(await this.planner.plan(request, options.signal), options);
  }

  async evaluateBody(body: Uint8Array, options: EvaluateOptions = {}): Promise<EvaluateResult> {
    return this.run(await this.planner.planBody(body, options.signal), options);
  }

  private async run(plan: Plan, options: EvaluateOptions): Promise<EvaluateResult> {
    const { signal } = options;
    const cacheKey = `${options.cacheScope ?? ''}\u0001${this.cacheKey}`;
    const answers = await this.scheduler.request(async (ticket) => {
      // Every pass (prefill chunks included) takes its turn: requests interleave pass by pass,
      // and an aborted request stops at its next pass.
      const step = <T>(pass: () => Promise<T>, tokens: number): Promise<T> =>
        ticket.pass(() => {
          this.tokensEvaluated += tokens;
          this.passes++;
          return pass();
        });
      const run: Run = (ids, past, candidates, present) => this.runner.forward(ids, past, candidates, present, step);
      const read = new Map<PlannedQuestion, number[]>();
      const answers = (): Record<string, Answer> =>
        answerQuestions(plan.questions, plan.questions.map((q) => read.get(q)!), this.temperatures);
      const cached = this.cache.lookup(cacheKey, plan.prefix);
      const prefixBytes = plan.prefix.length * this.runner.kvBytesPerToken;
      // One question runs in one pass over the whole prompt (no prefix stored), unless its prefix was
      // seen recently: then the prefix is stored, and later requests on the same state hit it.
      const single = plan.questions.length === 1 && !cached && !this.cache.admits(cacheKey, plan.prefix, prefixBytes);
      // The questions ride with the prefix's last prefill piece when its KV is not kept (one question
      // on a prefix not admitted; or the cache is off or too small) and they fit one packed pass:
      // one pass fewer, no prefix KV fetched, and a question's multi-token labels in the same pass.
      if (this.packs && !cached && (single || !this.cache.keeps(prefixBytes))) {
        const budget = this.packTokens;
        if (plan.questions.reduce((n, q) => n + packedTokens(q), 0) <= budget) {
          // The trunk is the prefill's last piece, what is left after whole chunks (chunks of at most
          // 1,024 tokens when prefill is unchunked: the bias is trunk² floats). Each trunk token
          // computes scores against every question token, all masked, so a short trunk wastes little,
          // and the head runs in whole chunks, the GEMM sizes prefill is tuned for.
          const ends = prefillEnds(plan.prefix.length, 0, this.runner.prefillChunk > 0 ? this.runner.prefillChunk : 1024);
          const head = plan.prefix.slice(0, ends.at(-2) ?? 0);
          const trunk = plan.prefix.slice(head.length);
          const past = head.length > 0 ? (await run(head, null, [], true)).present! : null;
          const [group] = packQuestions(plan.questions, budget, trunk);
          checkAborted(signal);
          // The whole prompt in one pass: it may share that pass with other requests waiting.
          const rows =
            past === null && this.batcher
              ? await this.batcher.submit(group!.pass, (fn) => ticket.pass(fn))
              : await this.runner.packed(group!.pass, past, step);
          for (const [q, logps] of await group!.finish(rows)) read.set(q, logps);
          return answers();
        }
      }
      if (single) {
        // One question: one pass over the whole prompt beats a prefix pass plus a suffix pass.
        const q = plan.questions[0]!;
        read.set(q, await this.labelLogProbs(run, q, [...plan.prefix, ...q.suffix], null, signal));
        return answers();
      }
      let prefixKv = cached;
      if (!prefixKv) {
        prefixKv = (await run(plan.prefix, null, [], true)).present!;
        this.cache.store(cacheKey, plan.prefix, prefixKv);
      }
      if (this.packs) {
        // Every question (and its labels' continuations) in one pass per token budget.
        for (const group of packQuestions(plan.questions, this.packTokens)) {
          checkAborted(signal);
          for (const [q, logps] of await group.finish(await this.runner.packed(group.pass, prefixKv, step))) read.set(q, logps);
        }
        return answers();
      }
      for (const q of plan.questions) read.set(q, await this.labelLogProbs(run, q, q.suffix, prefixKv, signal));
      return answers();
    }, signal);
    return { answers, usage: plan.usage };
  }

  stats(): EngineStats {
    return {
      queueDepth: this.scheduler.queueDepth,
      running: this.scheduler.running,
      prefixCacheHits: this.cache.hits,
      prefixCacheMisses: this.cache.misses,
      prefixCacheBytes: this.cache.bytes,
      tokensEvaluated: this.tokensEvaluated,
      passes: this.passes,
    };
  }

  async close(): Promise<void> {
    this.cache.clear();
    await this.planner.close();
    await this.scheduler.exclusive(() => this.runner.close());
  }

  /** One question's label log-probabilities: a pass over its tokens after `past`, then the passes its multi-token labels need. */
  private async labelLogProbs(run: Run, q: PlannedQuestion, tokens: number[], past: KvCache | null, signal?: AbortSignal): Promise<number[]> {
    checkAborted(signal);
    const continues = q.labels.some((l) => l.tokens.length > 1);
    const starts = firstTokens(q.labels);
    const first = await run(tokens, past, [starts], continues);
    const firstLogprobs = new Map(starts.map((token, c) => [token, first.logprobs[0]![c]!]));
    return labelLogProbs(q.labels, firstLogprobs, async (input, candidates) => {
      checkAborted(signal);
      return (await run(input, first.present!, candidates, false)).logprobs;
    });
  }
}

type Run = (ids: number[], past: KvCache | null, candidates: number[][], present: boolean) => ReturnType<ModelRunner['forward']>;

function checkAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new AbortedError();
}
