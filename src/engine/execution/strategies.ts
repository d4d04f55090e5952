// The four ways a planned request is evaluated, and the small chooser between them. Each strategy
// reads every question's label log-probabilities (keyed by question) with the passes it needs:
//   whole-packed         the prefix's last prefill piece and every question in one packed pass
//                        (the prefix KV is not kept); a whole prompt may share that pass with
//                        other requests (batching.ts)
//   single               one question: one pass over prefix + question (+ its labels' passes)
//   prefix-packed        the prefix from the cache or one pass (then stored), then the beginnings
//                        the questions share (stems.ts) in one pass when they save enough, then
//                        the questions packed, one pass per token budget
//   prefix-per-question  the prefix likewise, then one pass per question (graphs that cannot pack)
import { packedTokens, packQuestions, packWithStems } from './packing.js';
import type { Passes } from './passes.js';
import { firstTokens, labelLogProbs } from '../prompting/labels.js';
import type { Plan, PlannedQuestion } from '../prompting/plan.js';
import { prefillEnds, type KvCache } from '../model/runner.js';
import type { PrefixCache } from '../cache/prefix-cache.js';
import { AbortedError } from '../errors.js';

export type Strategy = 'whole-packed' | 'single' | 'prefix-packed' | 'prefix-per-question';

/** What decides the strategy, read before any pass. */
export interface StrategyFacts {
  /** The graph can pack, and packing is on. */
  packs: boolean;
  questions: number;
  /** The prefix's KV is in the cache. */
  cached: boolean;
  /** The cache admits this prefix now (its second sighting: single-question reuse). */
  admitted: boolean;
  /** The cache can hold the prefix's KV at all. */
  keeps: boolean;
  /** Every question's packed tokens fit one packed pass. */
  fitsOnePass: boolean;
  /**
   * The prefix runs in prefill passes of its own and the questions in packed passes only (a graph
   * whose two kinds of pass compute attention differently, each the same in every pass of its kind:
   * ModelRunner.splitsPrompt), so a question answers the same whatever else ran.
   */
  splitsPrompt?: boolean;
}

export function chooseStrategy(f: StrategyFacts): Strategy {
  if (f.splitsPrompt && f.packs) return 'prefix-packed';
  // One question runs in one pass over the whole prompt (no prefix stored), unless its prefix was
  // seen recently: then the prefix is stored, and later requests on the same state hit it.
  const single = f.questions === 1 && !f.cached && !f.admitted;
  // The questions ride with the prefix's last prefill piece when its KV is not kept (one question on
  // a prefix not admitted; or the cache is off or too small) and they fit one packed pass: one pass
  // fewer, no prefix KV fetched, and a question's multi-token labels in the same pass.
  if (f.packs && !f.cached && (single || !f.keeps) && f.fitsOnePass) return 'whole-packed';
  if (single) return 'single';
  return f.packs ? 'prefix-packed' : 'prefix-per-question';
}

/** Everything a strategy may use for one request. */
export interface ExecutionContext {
  plan: Plan;
  /** The only way to run a pass: each takes the request's turn and is counted. */
  passes: Passes;
  /** The model's longest prefill piece in tokens (0: prefill is not chunked). */
  prefillChunk: number;
  /** The most tokens one packed pass of questions holds. */
  packTokens: number;
  cache: PrefixCache;
  /** The scope the prefix is cached under (the model and the caller's cache scope). */
  cacheScope: string;
  /** The prefix's KV from the cache (undefined: it missed). */
  cached: KvCache | undefined;
  /**
   * Whether a prefix computed here is stored (default yes): not for a one-question request on a
   * prefix the cache does not admit yet, which a graph that splits prompts runs as prefix-packed.
   */
  storesPrefix?: boolean;
  signal?: AbortSignal;
}

export type LabelReads = Map<PlannedQuestion, number[]>;

export function checkAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new AbortedError();
}

/** One question's label log-probabilities: a pass over its tokens after `past`, then the passes its multi-token labels need. */
async function questionLogProbs(
  c: ExecutionContext,
  q: PlannedQuestion,
  tokens: number[],
  past: KvCache | null,
): Promise<number[]> {
  checkAborted(c.signal);
  const continues = q.labels.some((l) => l.tokens.length > 1);
  const starts = firstTokens(q.labels);
  const first = await c.passes.forward(tokens, past, [starts], continues);
  const firstLogprobs = new Map(starts.map((token, i) => [token, first.logprobs[0]![i]!]));
  return labelLogProbs(q.labels, firstLogprobs, async (input, candidates) => {
    checkAborted(c.signal);
    return (await c.passes.forward(input, first.present!, candidates, false)).logprobs;
  });
}

async function wholePacked(c: ExecutionContext): Promise<LabelReads> {
  const { plan, passes } = c;
  // The trunk is the prefill's last piece, what is left after whole chunks (chunks of at most 1,024
  // tokens when prefill is unchunked: the bias is trunk² floats). Each trunk token computes scores
  // against every question token, all masked, so a short trunk wastes little, and the head runs in
  // whole chunks, the GEMM sizes prefill is tuned for.
  const ends = prefillEnds(plan.prefix.length, 0, c.prefillChunk > 0 ? c.prefillChunk : 1024);
  const head = plan.prefix.slice(0, ends.at(-2) ?? 0);
  const trunk = plan.prefix.slice(head.length);
  const past = head.length > 0 ? (await passes.forward(head, null, [], true)).present! : null;
  const [group] = packQuestions(plan.questions, c.packTokens, trunk);
  checkAborted(c.signal);
  // The whole prompt in one pass: it may share that pass with other requests waiting.
  const rows = past === null ? await passes.whole(group!.pass) : await passes.packed(group!.pass, past);
  return new Map(await group!.finish(rows));
}

async function single(c: ExecutionContext): Promise<LabelReads> {
  // One question: one pass over the whole prompt beats a prefix pass plus a suffix pass.
  const q = c.plan.questions[0]!;
  return new Map([[q, await questionLogProbs(c, q, [...c.plan.prefix, ...q.suffix], null)]]);
}

/** The prefix's KV: from the cache, or one pass (then stored, unless the context says not). */
async function prefixKv(c: ExecutionContext): Promise<KvCache> {
  if (c.cached) return c.cached;
  const kv = (await c.passes.forward(c.plan.prefix, null, [], true)).present!;
  if (c.storesPrefix !== false) c.cache.store(c.cacheScope, c.plan.prefix, kv);
  return kv;
}

async function prefixPacked(c: ExecutionContext): Promise<LabelReads> {
  const kv = await prefixKv(c);
  // The beginnings the questions share, once for all (stems.ts), when they save enough.
  const { stems, groups } = packWithStems(c.plan.questions, c.packTokens);
  if (stems) checkAborted(c.signal);
  const past = stems ? await c.passes.packedPresent(stems.pass, kv) : kv;
  const read: LabelReads = new Map();
  // Every question (and its labels' continuations) in one pass per token budget.
  for (const group of groups) {
    checkAborted(c.signal);
    for (const [q, logps] of await group.finish(await c.passes.packed(group.pass, past))) read.set(q, logps);
  }
  return read;
}

async function prefixPerQuestion(c: ExecutionContext): Promise<LabelReads> {
  const kv = await prefixKv(c);
  const read: LabelReads = new Map();
  for (const q of c.plan.questions) read.set(q, await questionLogProbs(c, q, q.suffix, kv));
  return read;
}

export const STRATEGIES: Record<Strategy, (c: ExecutionContext) => Promise<LabelReads>> = {
  'whole-packed': wholePacked,
  single,
  'prefix-packed': prefixPacked,
  'prefix-per-question': prefixPerQuestion,
};

/** Whether every question of `plan` fits one packed pass of `budget` tokens. */
export function fitsOnePass(plan: Plan, budget: number): boolean {
  return plan.questions.reduce((n, q) => n + packedTokens(q), 0) <= budget;
}
