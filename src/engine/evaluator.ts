// The evaluator: one loaded model answering requests. Encodes the shared prefix once (or takes it
// from the cross-request cache), then each question as a suffix on that prefix's KV cache.
import { DEFAULTS, type EngineConfig } from './config.js';
import { AbortedError, ModelLoadError } from './errors.js';
import { buildAnswer, normalize } from './answers.js';
import { firstTokens, labelLogProbs } from './labels.js';
import { openModelFolder } from './model-folder.js';
import { planRequest, type Budgets, type PlannedQuestion } from './plan.js';
import { PrefixCache } from './prefix-cache.js';
import { promptSet, type PromptSet } from './prompts.js';
import { ModelRunner, type KvCache } from './runner.js';
import { Scheduler } from './scheduler.js';
import { TextCodec } from './tokenizer.js';
import type { Answer, EngineStats, EvaluateOptions, EvaluateRequest, EvaluateResult, Evaluator } from './types.js';

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
  return new OnnxEvaluator(config, folder.manifest.synthetic === true, `${folder.dir}#${folder.variant}`, codec, runner, endToken, {
    request: config.requestTokenBudget ?? DEFAULTS.requestTokenBudget,
    question: config.questionTokenBudget ?? DEFAULTS.questionTokenBudget,
    context: folder.maxContext,
  }, promptSet(folder.manifest.prompt_version));
}

class OnnxEvaluator implements Evaluator {
  private readonly scheduler: Scheduler;
  private readonly cache: PrefixCache;
  private tokensEvaluated = 0;

  constructor(
    private readonly config: EngineConfig,
    readonly synthetic: boolean,
    private readonly cacheKey: string,
    private readonly codec: TextCodec,
    private readonly runner: ModelRunner,
    private readonly endToken: number,
    private readonly budgets: Budgets,
    private readonly prompts: PromptSet,
  ) {
    this.scheduler = new Scheduler(config.maxQueue ?? DEFAULTS.maxQueue);
    this.cache = new PrefixCache(config.prefixCacheBytes ?? DEFAULTS.prefixCacheBytes);
  }

  get modelDir(): string {
    return this.config.modelDir;
  }

  async evaluate(request: EvaluateRequest, options: EvaluateOptions = {}): Promise<EvaluateResult> {
    // Planning throws budget errors before the request takes a place in the queue.
    const plan = planRequest(request, this.codec, this.prompts, this.endToken, this.budgets);
    const { signal } = options;
    const answers = await this.scheduler.run(async () => {
      const out: Record<string, Answer> = {};
      const cached = this.cache.lookup(this.cacheKey, plan.prefix);
      if (plan.questions.length === 1 && !cached) {
        // One question: one pass over the whole prompt beats a prefix pass plus a suffix pass.
        const q = plan.questions[0];
        out[q.key] = await this.answer(q, [...plan.prefix, ...q.suffix], null, signal);
        return out;
      }
      let prefixKv = cached;
      if (!prefixKv) {
        checkAborted(signal);
        prefixKv = (await this.run(plan.prefix, null, [], true)).present!;
        this.cache.store(this.cacheKey, plan.prefix, prefixKv);
      }
      for (const q of plan.questions) out[q.key] = await this.answer(q, q.suffix, prefixKv, signal);
      return out;
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
    };
  }

  async close(): Promise<void> {
    this.cache.clear();
    await this.scheduler.run(() => this.runner.close());
  }

  /** One question: a pass over its tokens after `past`, then the passes its multi-token labels need. */
  private async answer(q: PlannedQuestion, tokens: number[], past: KvCache | null, signal?: AbortSignal): Promise<Answer> {
    checkAborted(signal);
    const continues = q.labels.some((l) => l.tokens.length > 1);
    const starts = firstTokens(q.labels);
    const first = await this.run(tokens, past, [starts], continues);
    const firstLogprobs = new Map(starts.map((token, c) => [token, first.logprobs[0][c]]));
    const logps = await labelLogProbs(q.labels, firstLogprobs, async (input, candidates) => {
      checkAborted(signal);
      return (await this.run(input, first.present!, candidates, false)).logprobs;
    });
    return buildAnswer(q.question, normalize(logps));
  }

  private run(...args: Parameters<ModelRunner['forward']>): ReturnType<ModelRunner['forward']> {
    this.tokensEvaluated += args[0].length;
    return this.runner.forward(...args);
  }
}

function checkAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new AbortedError();
}
