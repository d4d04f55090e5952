// The evaluator: one loaded model answering requests. Plans a request (prompting/), takes its turn
// in the scheduler, and runs the strategy the chooser picks (strategies.ts): the shared prefix
// encoded once (or taken from the cross-request cache), each question as a suffix on its KV.
import { resolveEngineConfig, type EngineConfig, type ResolvedEngineConfig } from '../config.js';
import { ModelLoadError } from '../errors.js';
import { createFamilyEvaluator, DEFAULT_FAMILY, detectFamily, familyNamed, isRowFamily } from '../families/index.js';
import { answerQuestions, type AnswerTemperatures } from './answers.js';
import { RequestBatcher } from './batching.js';
import { chooseStrategy, fitsOnePass, STRATEGIES } from './strategies.js';
import { PassCount, Passes } from './passes.js';
import { StageRecorder } from './stages.js';
import { openModelFolder } from '../model/model-folder.js';
import type { Budgets, Plan, ReadQuestion } from '../prompting/plan.js';
import {
  defaultPlannerThreads,
  inlinePlanner,
  workerPlanner,
  type Planner,
  type PlannerContract,
} from '../prompting/planner/index.js';
import { PrefixCache } from '../cache/prefix-cache.js';
import { promptSet } from '../prompting/prompts.js';
import { ModelRunner } from '../model/runner.js';
import { Scheduler } from './scheduler.js';
import { TextCodec } from '../prompting/tokenizer.js';
import type { EngineStats, EvaluateOptions, EvaluateRequest, EvaluateResult, Evaluator } from '../types.js';

export async function createEvaluator(settings: EngineConfig): Promise<Evaluator> {
  const config = resolveEngineConfig(settings);
  // A folder of a row family is run by that family's evaluator (families/).
  const family = detectFamily(config.modelDir, config.family);
  if (isRowFamily(family)) return createFamilyEvaluator(config, family);
  const folder = await openModelFolder(config.modelDir, config.variant);
  const codec = await TextCodec.load(folder.dir);
  // A folder of a family with its own prompt contract (its descriptor's `contract`) is read under it:
  // Assay's chat prompt is not used.
  const contract = readContract(family, folder.dir, codec, config);
  if (!contract && !codec.hasChatTemplate) {
    throw new ModelLoadError(
      `${folder.dir}: no chat template in tokenizer_config.json, chat_template.jinja or chat_template.json: Assay needs an instruction-tuned (chat) model`,
    );
  }
  const endToken = codec.eosTokenId ?? folder.eosTokenIds[0] ?? (contract ? -1 : undefined);
  if (endToken === undefined)
    throw new ModelLoadError(`${folder.dir}: no eos_token in tokenizer_config.json or generation_config.json`);
  const runner = await ModelRunner.load(folder, config, config.temperature ?? folder.manifest.temperature ?? 1);
  // (A graph left unrewritten has been warned about already, or the operator turned the rewrite off.)
  if (runner.rewritten && !runner.packs && config.packQuestions !== false) {
    const why = !runner.hasPositionIds
      ? 'the graph takes no position_ids'
      : 'its attention takes no mask bias (a fused attention kernel)';
    config.onNote?.({
      kind: 'packing',
      message: `${folder.onnxPath}: packed evaluation is not available (${why}); questions run one pass per question`,
    });
  }
  const budgets: Budgets = {
    request: config.requestTokenBudget,
    question: config.questionTokenBudget,
    context: folder.maxContext,
  };
  const promptVersion = config.promptVersion ?? folder.manifest.prompt_version;
  promptSet(promptVersion); // an unknown prompt_version fails the load, not each request
  const rotations = config.optionRotations ?? folder.manifest.option_rotations ?? 1;
  if (!Number.isInteger(rotations) || rotations < 1)
    throw new ModelLoadError(`${folder.dir}: option_rotations must be a whole number ≥ 1, got ${rotations}`);
  const temperatures = config.answerTemperatures ?? folder.manifest.answer_temperature ?? {};
  for (const [type, t] of Object.entries(temperatures)) {
    if (!['noul', 'choice', 'score'].includes(type) || typeof t !== 'number' || !(t > 0) || !Number.isFinite(t)) {
      throw new ModelLoadError(
        `${folder.dir}: answer_temperature.${type} must be a positive number for noul, choice or score, got ${JSON.stringify(t)}`,
      );
    }
  }
  const threads = config.plannerThreads ?? defaultPlannerThreads();
  const planner =
    threads > 0
      ? // Planning is quick next to a request's passes: its queue holds at least 16 (the engine's bound decides 529s).
        workerPlanner({
          modelDir: folder.dir,
          promptVersion,
          rotations,
          endToken,
          budgets,
          threads,
          maxQueue: Math.max(16, config.maxQueue),
          ...contract?.planner,
        })
      : inlinePlanner(codec, { promptVersion, rotations, endToken, budgets, ...contract?.planner });
  return new OnnxEvaluator(
    config,
    folder.manifest.synthetic === true,
    `${folder.dir}#${folder.variant}`,
    runner,
    planner,
    temperatures,
    contract?.family ?? { name: DEFAULT_FAMILY },
  );
}

/** A folder's own prompt contract: what its planner and its readout need. */
interface Contract {
  planner: { contract: PlannerContract };
  family: EngineFamily;
}

/** The contract of a decoder-engine family whose folder carries one (its files read and reported at load); none for a decoder. */
function readContract(
  family: string,
  dir: string,
  codec: TextCodec,
  config: ResolvedEngineConfig,
): Contract | undefined {
  const spec = familyNamed(family)?.contract;
  if (!spec) return undefined;
  const read = spec.read(dir, codec);
  config.onNote?.({ kind: 'family', message: `${family} (${spec.what})${read.notes.map((n) => `; ${n}`).join('')}` });
  return { planner: { contract: { family, settings: read.settings } }, family: { name: family, read: read.read } };
}

/** The decoder engine's family: Assay's prompt, or a prompt contract and its readout. */
interface EngineFamily {
  name: string;
  /** Each answer's log-probabilities from its rows' label log-probabilities (a prompt contract's readout). */
  read?(asked: readonly ReadQuestion[], logps: ReadonlyArray<readonly number[]>): number[][];
}

class OnnxEvaluator implements Evaluator {
  private readonly scheduler: Scheduler;
  private readonly cache: PrefixCache;
  /** Every pass this model ran, shared ones once (stats). */
  private readonly count = new PassCount();

  constructor(
    private readonly config: ResolvedEngineConfig,
    readonly synthetic: boolean,
    /** The loaded model: its folder and variant (the prefix cache's scope includes it). */
    private readonly modelId: string,
    private readonly runner: ModelRunner,
    private readonly planner: Planner,
    private readonly temperatures: AnswerTemperatures,
    private readonly family: EngineFamily,
  ) {
    this.scheduler = new Scheduler(config.maxQueue);
    this.cache = new PrefixCache(config.prefixCacheBytes);
    this.packs = runner.packs && config.packQuestions !== false;
    this.packTokens = config.packTokens;
    this.batchPackTokens = Math.max(1, Math.min(config.packTokens, config.batchPackTokens));
    // A batch item's prefill pieces are no longer than its packed passes (unless prefill is unchunked).
    this.batchPrefillChunk =
      runner.prefillChunk > 0 ? Math.min(runner.prefillChunk, this.batchPackTokens) : runner.prefillChunk;
    let batchTokens = config.batchTokens;
    if (this.packs && batchTokens > 0 && runner.sharesActivationScales) {
      // One activation scale per pass (a dynamic int8 export run as exported: --no-per-token-int8,
      // or products the per-token rewrite did not recognize): a request's answers would move with
      // whatever another caller's tokens put in the same pass. Within a request that is the caller's own business.
      batchTokens = 0;
      config.onNote?.({
        kind: 'packing',
        message:
          `${modelId}: packing across requests is off: this export quantizes activations at run time ` +
          `with one scale per pass (DynamicQuantizeLinear, not rewritten per token), so one ` +
          `request's tokens would change another's answers`,
      });
    }
    if (this.packs && batchTokens > 0 && runner.splitsPrompt) {
      // Shared passes carry whole prompts (whole-packed), which a graph that splits them never runs.
      batchTokens = 0;
      config.onNote?.({
        kind: 'packing',
        message:
          `${modelId}: packing across requests is off: this int8 graph runs a state's tokens and its ` +
          `questions' in passes of their own kinds, so an answer is the same in any pass ` +
          `(--no-fused-attention runs every pass alike and allows it)`,
      });
    }
    this.batcher =
      this.packs && batchTokens > 0
        ? new RequestBatcher(
            batchTokens,
            (pass) => this.runner.packed(pass, null, this.count.run),
            // A shared pass of batch items is as long as a trunk piece and its questions, at most.
            this.batchPrefillChunk + this.batchPackTokens,
          )
        : undefined;
  }

  /** Packs concurrent requests' whole prompts into shared passes (undefined: off). */
  private readonly batcher?: RequestBatcher;

  /** Whether a request's questions run packed, one pass per `packTokens` tokens (else one pass per question). */
  readonly packs: boolean;
  private readonly packTokens: number;
  /** The batch lane's packed passes: fewer tokens, so an interactive request never waits long behind one. */
  private readonly batchPackTokens: number;
  /** The batch lane's prefill pieces: as short as its packed passes, for the same reason. */
  private readonly batchPrefillChunk: number;

  get modelDir(): string {
    return this.config.modelDir;
  }

  get graph(): string {
    return this.runner.graphPath;
  }

  evaluate(request: EvaluateRequest, options: EvaluateOptions = {}): Promise<EvaluateResult> {
    // Planning throws budget errors before the request takes a place in the queue.
    return this.planned(() => this.planner.plan(request, options.signal, options.lane), options);
  }

  evaluateBody(body: Uint8Array, options: EvaluateOptions = {}): Promise<EvaluateResult> {
    return this.planned(() => this.planner.planBody(body, options.signal, options.lane), options);
  }

  /**
   * Plans, then answers. An interactive request holds the batch lane while it is planned (a batch
   * pass started now would run before its first pass), until it is admitted (synchronously, by
   * `answer`'s call of the scheduler) or planning fails.
   */
  private async planned(plan: () => Promise<Plan>, options: EvaluateOptions): Promise<EvaluateResult> {
    const release = options.lane === 'batch' ? undefined : this.scheduler.arrive();
    const stages = options.trace ? new StageRecorder() : undefined;
    try {
      const planned = stages ? await stages.time('planning', plan) : await plan();
      const answering = this.answer(planned, options, stages);
      release?.();
      const result = await answering;
      return stages ? { ...result, stages: stages.spans } : result;
    } finally {
      release?.();
    }
  }

  /** Answers a planned request: its turn in the scheduler, the strategy the chooser picks, the answers. */
  private async answer(plan: Plan, options: EvaluateOptions, stages?: StageRecorder): Promise<EvaluateResult> {
    const { signal } = options;
    // What may share a cached prefix: this model, for callers of the same cache scope.
    const cacheScope = `${options.cacheScope ?? ''}\u0001${this.modelId}`;
    const batch = options.lane === 'batch';
    const packTokens = batch ? this.batchPackTokens : this.packTokens;
    const prefillChunk = batch ? this.batchPrefillChunk : this.runner.prefillChunk;
    const queued = stages?.now();
    const answers = await this.scheduler.request(
      async (ticket) => {
        if (queued !== undefined) stages!.mark('queue_wait', queued);
        const cached = this.cache.lookup(cacheScope, plan.prefix);
        const prefixBytes = plan.prefix.length * this.runner.kvBytesPerToken;
        // A one-question request on a prefix that missed is a sighting: its prefix is stored on the
        // second one (admits), and this one is remembered for the next (asked first, then recorded).
        const sighting = plan.questions.length === 1 && !cached;
        const admitted = sighting && this.cache.admits(cacheScope, plan.prefix, prefixBytes);
        if (sighting) this.cache.recordSighting(cacheScope, plan.prefix, prefixBytes);
        const strategy = chooseStrategy({
          packs: this.packs,
          questions: plan.questions.length,
          cached: cached !== undefined,
          admitted,
          keeps: this.cache.keeps(prefixBytes),
          fitsOnePass: fitsOnePass(plan, packTokens),
          splitsPrompt: this.runner.splitsPrompt,
        });
        const read = await STRATEGIES[strategy]({
          plan,
          // Every pass (prefill pieces included) takes its turn: requests interleave pass by pass, and
          // an aborted request stops at its next pass.
          passes: new Passes(this.runner, ticket, this.count, this.batcher, options.lane, prefillChunk, stages),
          prefillChunk,
          packTokens,
          cache: this.cache,
          cacheScope,
          cached,
          storesPrefix: !sighting || admitted,
          signal,
        });
        const readout = stages?.now();
        const logps = plan.questions.map((q) => read.get(q)!);
        // A label-token family reads its answers from its rows (a score question: one row per level).
        const out =
          plan.readout && this.family.read
            ? answerQuestions(
                plan.readout.questions,
                this.family.read(plan.readout.questions, logps),
                this.temperatures,
                this.config.confidence,
              )
            : answerQuestions(plan.questions, logps, this.temperatures, this.config.confidence);
        if (readout !== undefined) stages!.mark('readout', readout);
        return out;
      },
      signal,
      options.lane,
    );
    return plan.usageParts
      ? { answers, usage: plan.usage, usageParts: plan.usageParts }
      : { answers, usage: plan.usage };
  }

  stats(): EngineStats {
    return {
      queueDepth: this.scheduler.queueDepth,
      batchQueueDepth: this.scheduler.batchQueueDepth,
      running: this.scheduler.running,
      prefixCacheHits: this.cache.hits,
      prefixCacheMisses: this.cache.misses,
      prefixCacheBytes: this.cache.bytes,
      tokensEvaluated: this.count.tokens,
      passes: this.count.passes,
      family: this.family.name,
      prefixReuse: true,
    };
  }

  async close(): Promise<void> {
    this.cache.clear();
    await this.planner.close();
    await this.scheduler.exclusive(() => this.runner.close());
  }
}
