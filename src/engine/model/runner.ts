// The model runner: one onnxruntime session and its I/O contract, discovered from the session's
// metadata and config.json (no architecture is hard-coded). Everything that touches tensors is here.
import * as ort from 'onnxruntime-node';
import { EngineError, ModelLoadError } from '../errors.js';
import {
  BIAS_INPUT,
  CANDIDATES_INPUT,
  INV_TEMPERATURE_INPUT,
  LOGPROBS_OUTPUT,
  POSITIONS_INPUT,
} from './graph-rewrite.js';
import { rewrittenGraph, type GraphFacts, type RewrittenGraph } from './graph-file.js';
import type { ModelFolder } from './model-folder.js';
import { resolveEngineConfig, type EngineConfig, type ResolvedEngineConfig } from '../config.js';
import { openSession, sessionOptions } from './session.js';

/** Keys and values of every layer for `length` tokens, as the session's present.* outputs gave them. */
/** Runs one pass of `tokens` tokens in the caller's turn (the scheduler's, for an evaluator). */
export type PassStep = <T>(pass: () => Promise<T>, tokens: number) => Promise<T>;

export interface KvCache {
  /** past_key_values.* input name → tensor [1, kv_heads, length, head_dim] */
  tensors: Map<string, ort.Tensor>;
  length: number;
  bytes: number;
}

/**
 * A packed pass: `tokens` after the past, each with its parent (the index of the token before it in
 * its own sequence, or -1 when it continues the past directly). A token sees the past and its
 * ancestors only; its position is the past's length plus its depth. `reads` name the tokens whose
 * next-token log-probabilities are read, and at which candidates.
 */
export interface PackedPass {
  tokens: number[];
  parents: number[];
  reads: Array<{ at: number; candidates: number[] }>;
  /**
   * When the past ends in stems (a tree an earlier packed pass computed, its KV kept: packedPresent)
   * rather than one sequence: the stem tokens' parents among themselves (-1: the tokens before
   * them), and for each token of this pass whose parent is -1 the stem token it continues (-1: the
   * tokens before the stems). A token then sees the tokens before the stems, its own stem's
   * ancestors and its own; positions follow that path.
   */
  stems?: { parents: number[]; roots: number[] };
}

export interface ForwardResult {
  /** logprobs[j][c]: log-probability of candidates[j][c] at the j-th of the last positions read. */
  logprobs: number[][];
  present?: KvCache;
}

export class ModelRunner {
  private readonly pastNames: string[];
  /** past input name → present output name */
  private readonly presentOf = new Map<string, string>();
  readonly hasPositionIds: boolean;
  private readonly logitsToKeepName: string | undefined;
  private readonly kvType: 'float32' | 'float16';
  private readonly kvHeads: number;
  private readonly headDim: number;
  /** Inputs longer than this run in chunks of this many tokens (0: never). */
  prefillChunk: number;
  /** Whether the loaded graph was rewritten to project only kept positions and return candidate log-probabilities. */
  readonly rewritten: boolean;

  /** Whether the graph takes an attention bias and position ids, so a pass can evaluate a tree of sequences (packed). */
  readonly packs: boolean;
  /**
   * Whether the graph quantizes activations with one scale over a whole pass (dynamic int8): then
   * a token's numbers depend on the other tokens of its pass. Unknown (not rewritten) counts as yes.
   */
  readonly sharesActivationScales: boolean;
  private readonly biased: boolean;
  /** Attention layers the loaded graph runs as GroupQueryAttention after the load-time rewrite (0: none). */
  readonly fusedLayers: number;
  /**
   * Whether a prompt's state and its questions must run in passes of their own kinds: the graph's
   * causal passes run the fused op and its masked passes float64 attention (exact-attention.ts),
   * each the same for a token in every pass of its kind but not the same as the other.
   */
  readonly splitsPrompt: boolean;

  private constructor(
    private readonly session: ort.InferenceSession,
    folder: ModelFolder,
    private readonly temperature: number,
    prefillChunk: number,
    facts: GraphFacts,
    /** The ONNX file the session runs: the rewritten graph (in the graph cache) or the export itself. */
    readonly graphPath: string,
  ) {
    this.prefillChunk = prefillChunk;
    this.sharesActivationScales = facts.sharesActivationScales;
    this.fusedLayers = facts.fusedAttention && 'layers' in facts.fusedAttention ? facts.fusedAttention.layers : 0;
    this.splitsPrompt = this.fusedLayers > 0 && (facts.exactAttention ?? 0) > 0;
    const inputs = session.inputNames;
    const outputs = new Set(session.outputNames);
    for (const required of ['input_ids', 'attention_mask']) {
      if (!inputs.includes(required))
        throw new ModelLoadError(`${folder.onnxPath}: no ${required} input: not a decoder export`);
    }
    if (!outputs.has('logits'))
      throw new ModelLoadError(`${folder.onnxPath}: no logits output: not a causal LM export`);
    // KV names as genai_config.json gives them, else past_key_values.* ↔ present.* (HF, Optimum).
    const kv =
      folder.kvNames ??
      inputs
        .filter((n) => n.startsWith('past_key_values.'))
        .map((past) => ({ past, present: past.replace(/^past_key_values\./, 'present.') }));
    this.pastNames = kv.map((k) => k.past);
    if (this.pastNames.length === 0) {
      throw new ModelLoadError(
        `${folder.onnxPath}: no past_key_values.* inputs: export it with a KV cache (text-generation-with-past)`,
      );
    }
    for (const { past, present } of kv) {
      if (!inputs.includes(past))
        throw new ModelLoadError(
          `${folder.onnxPath}: no input ${past} (named by ${folder.layout === 'genai' ? 'genai_config.json' : 'the export'})`,
        );
      if (!outputs.has(present))
        throw new ModelLoadError(`${folder.onnxPath}: input ${past} has no matching ${present} output`);
      this.presentOf.set(past, present);
    }
    this.hasPositionIds = inputs.includes('position_ids');
    this.logitsToKeepName = inputs.find((n) => n === 'num_logits_to_keep' || n === 'logits_to_keep');
    this.rewritten = inputs.includes(POSITIONS_INPUT) && outputs.has(LOGPROBS_OUTPUT);
    this.biased = inputs.includes(BIAS_INPUT);
    this.packs = this.rewritten && this.biased && this.hasPositionIds;

    const meta = session.inputMetadata.find((m) => m.name === this.pastNames[0]);
    const shape = meta && meta.isTensor ? meta.shape : [];
    const type = meta && meta.isTensor ? meta.type : 'float32';
    if (type !== 'float32' && type !== 'float16')
      throw new ModelLoadError(`${folder.onnxPath}: KV cache type ${type} is not supported`);
    this.kvType = type;
    const c = folder.config;
    const heads = num(c.num_attention_heads);
    this.kvHeads = typeof shape[1] === 'number' ? shape[1] : num(c.num_key_value_heads) || heads;
    this.headDim = typeof shape[3] === 'number' ? shape[3] : num(c.head_dim) || num(c.hidden_size) / heads;
    if (!this.kvHeads || !this.headDim)
      throw new ModelLoadError(
        `${folder.dir}/config.json: cannot tell the KV cache shape (num_key_value_heads, head_dim)`,
      );
  }

  /** A runner on its own (tools, benches): the config resolved here, as the engine resolves its own once. */
  static async create(folder: ModelFolder, config: EngineConfig, temperature = 1): Promise<ModelRunner> {
    return ModelRunner.load(folder, resolveEngineConfig(config), temperature);
  }

  /** The engine's runner: `c` is the model's config, resolved once (createEvaluator) and read as is. */
  static async load(folder: ModelFolder, c: ResolvedEngineConfig, temperature = 1): Promise<ModelRunner> {
    const provider = c.provider;
    const options = await sessionOptions(c);
    const create = (path: string, externalDataDir?: string): Promise<ort.InferenceSession> =>
      openSession(path, options, externalDataDir);
    let session: ort.InferenceSession | undefined;
    let facts: GraphFacts = { sharesActivationScales: true };
    let graphPath = folder.onnxPath;
    const vocab = num(folder.config.vocab_size);
    if (c.rewriteGraph && vocab) {
      let rewritten: RewrittenGraph | undefined;
      try {
        // The int8 form of 4-bit products is a CPU form (CUDA has MatMulNBits kernels, no integer ones): never on CUDA.
        const q4 = provider === 'cuda' ? 'native' : c.q4Kernels;
        rewritten = await rewrittenGraph(folder, vocab, {
          ...(c.graphCacheDir ? { cacheDir: c.graphCacheDir } : {}),
          q4,
          perToken: c.perTokenInt8,
          provider,
          fuseAttention: c.fusedAttention,
        });
      } catch (error) {
        // An unreadable or undecodable file: the stock load below reports it.
        c.onNote?.({
          kind: 'fallback',
          message: `graph rewrite skipped for ${folder.onnxPath}: ${(error as Error).message}`,
        });
      }
      if (rewritten) {
        try {
          session = await create(rewritten.path, rewritten.externalDataDir);
          facts = rewritten;
          const q4 = rewritten.q4ToInt8;
          if (q4) {
            const mb = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;
            c.onNote?.({
              kind: 'q4',
              message:
                `4-bit weights run through the int8 kernels (converted at load): ${q4.nodes} matrix products, ` +
                `their weights ${mb(q4.int8Bytes)} instead of ${mb(q4.q4Bytes)} (+${mb(q4.int8Bytes - q4.q4Bytes)}); ` +
                '--q4-kernels native keeps the 4-bit kernel and its memory',
            });
          }
          graphPath = rewritten.path;
          const f = rewritten.fusedAttention;
          if (f)
            c.onNote?.({
              kind: 'attention',
              message:
                'layers' in f
                  ? `fused into GroupQueryAttention in ${f.layers} layers`
                  : `as exported, not fused (${f.skipped})`,
            });
        } catch (error) {
          c.onNote?.({
            kind: 'fallback',
            message: `the rewritten graph of ${folder.onnxPath} did not load (${(error as Error).message}); running the export as is`,
          });
        }
      }
    }
    session ??= await create(folder.onnxPath);
    return new ModelRunner(session, folder, temperature, c.prefillChunk, facts, graphPath);
  }

  /**
   * Runs `ids` after `past` (batch 1) and returns the log-probabilities of `candidates[j]` at each of
   * the last `candidates.length` positions (none for a prefix pass). The present KV is fetched only
   * when a later pass continues from it: onnxruntime-node copies every output it returns.
   */
  async forward(
    ids: number[],
    past: KvCache | null,
    candidates: number[][],
    present: boolean,
    /** Runs each pass (the scheduler's turn: passes of concurrent requests interleave, an aborted request stops here). */
    step: PassStep = (pass) => pass(),
    /** The base of the prefill pieces (default the runner's; the batch lane's are shorter). */
    chunk = this.prefillChunk,
  ): Promise<ForwardResult> {
    // Long inputs run in chunks over the growing cache: a stock export's attention materializes
    // [heads, n, past + n] scores, so one 8,000-token pass would need gigabytes and run at a
    // fraction of the speed of 256-token pieces.
    if (chunk > 0 && ids.length > chunk && candidates.length < ids.length) {
      // Pieces grow with the cache (a longer past makes each piece's present copy dearer than
      // its attention); the last piece is the remainder, long enough to hold every position read.
      const ends = prefillEnds(ids.length, past?.length ?? 0, chunk);
      while (ends.length > 1 && ids.length - ends[ends.length - 2]! < candidates.length)
        ends.splice(ends.length - 2, 1);
      let cache = past;
      let start = 0;
      for (const end of ends.slice(0, -1)) {
        const piece = ids.slice(start, end);
        const from = cache;
        cache = (await step(() => this.run(piece, from, [], true), piece.length)).present!;
        start = end;
      }
      const last = ids.slice(start);
      return step(() => this.run(last, cache, candidates, present), last.length);
    }
    return step(() => this.run(ids, past, candidates, present), ids.length);
  }

  /**
   * One pass over a tree of token sequences after `past` (see PackedPass); returns the candidates'
   * log-probabilities at each read, in order. Only those are fetched: no logits, no KV.
   */
  async packed(pass: PackedPass, past: KvCache | null, step: PassStep = (p) => p()): Promise<number[][]> {
    return (await this.runPacked(pass, past, step, false)).logprobs;
  }

  /** A packed pass that reads nothing and returns its present KV: the past, then the pass's tokens (stems). */
  async packedPresent(pass: PackedPass, past: KvCache | null, step: PassStep = (p) => p()): Promise<KvCache> {
    return (await this.runPacked(pass, past, step, true)).present!;
  }

  private async runPacked(
    pass: PackedPass,
    past: KvCache | null,
    step: PassStep,
    present: boolean,
  ): Promise<ForwardResult> {
    if (!this.packs) throw new EngineError('this graph cannot run packed passes');
    const n = pass.tokens.length;
    const pastLength = past?.length ?? 0;
    const total = pastLength + n;
    const stemParents = pass.stems?.parents ?? [];
    const stemStart = pastLength - stemParents.length;
    if (stemStart < 0) throw new EngineError('the past is shorter than its stems');
    /** Positions of the stems (a stem's position is its depth after the tokens before them). */
    const stemPositions: number[] = [];
    stemParents.forEach((p) => stemPositions.push(p < 0 ? stemStart : stemPositions[p]! + 1));
    const positions = new Array<number>(n);
    /** The stem each token continues (-1: none), through its own ancestors. */
    const stemOf = new Array<number>(n);
    // -1e9 (as the exporters' own masks): every row keeps its own token, so no row is all masked.
    const bias = new Float32Array(n * total);
    for (let i = 0; i < n; i++) {
      const parent = pass.parents[i]!;
      if (parent >= i) throw new EngineError('a packed token must come after its parent');
      stemOf[i] = parent >= 0 ? stemOf[parent]! : (pass.stems?.roots[i] ?? -1);
      positions[i] =
        parent >= 0 ? positions[parent]! + 1 : stemOf[i]! >= 0 ? stemPositions[stemOf[i]!]! + 1 : stemStart;
      const row = bias.subarray(i * total + stemStart, (i + 1) * total);
      row.fill(-1e9);
      for (let s = stemOf[i]!; s >= 0; s = stemParents[s]!) row[s] = 0;
      const own = row.subarray(pastLength - stemStart);
      for (let a = i; a >= 0; a = pass.parents[a]!) own[a] = 0;
    }
    const candidates = pass.reads.map((r) => r.candidates);
    const reads = pass.reads.map((r) => r.at);
    return step(() => this.run(pass.tokens, past, candidates, present, { positions, bias, reads }), n);
  }

  private async run(
    ids: number[],
    past: KvCache | null,
    candidates: number[][],
    present: boolean,
    packed?: { positions: number[]; bias: Float32Array; reads: number[] },
  ): Promise<ForwardResult> {
    const keep = candidates.length;
    const feeds = this.feeds(ids, past, candidates, packed);
    const fetches: string[] = [];
    if (keep > 0) fetches.push(this.rewritten ? LOGPROBS_OUTPUT : 'logits');
    if (present) for (const name of this.pastNames) fetches.push(this.presentOf.get(name)!);
    let out: ort.InferenceSession.OnnxValueMapType;
    try {
      out = await this.session.run(feeds, fetches);
    } catch (error) {
      throw new EngineError(
        `onnxruntime failed a pass of ${ids.length} tokens after ${past?.length ?? 0}: ${(error as Error).message}`,
      );
    }

    const result: ForwardResult = { logprobs: [] };
    if (keep > 0) {
      if (this.rewritten) {
        const logprobs = output(out, LOGPROBS_OUTPUT);
        const data = logprobs.data as Float32Array;
        const width = logprobs.dims[2]!;
        result.logprobs = candidates.map((row, j) => row.map((_, c) => data[j * width + c]!));
      } else {
        const rows = this.logitRows(output(out, 'logits'), keep);
        result.logprobs = candidates.map((row, j) => {
          const at = logSoftmaxAt(rows[j]!, this.temperature);
          return row.map(at);
        });
      }
    }
    if (present) result.present = this.collectPresent(out, past?.length ?? 0, ids.length);
    return result;
  }

  /** Raw vocabulary logits of every position of `ids` (for checks against other implementations). */
  async logits(ids: number[], past: KvCache | null = null): Promise<Float32Array[]> {
    const out = await this.session.run(
      this.feeds(
        ids,
        past,
        ids.map(() => [0]),
      ),
      ['logits'],
    );
    return this.logitRows(output(out, 'logits'), ids.length);
  }

  /**
   * Inputs of a pass of `ids` after `past`. A plain pass reads the last `candidates.length`
   * positions; a packed pass gives each token's position, the bias that hides other branches, and
   * the positions it reads.
   */
  private feeds(
    ids: number[],
    past: KvCache | null,
    candidates: number[][],
    packed?: { positions: number[]; bias: Float32Array; reads: number[] },
  ): Record<string, ort.Tensor> {
    const keep = candidates.length;
    const pastLength = past?.length ?? 0;
    const n = ids.length;
    const total = pastLength + n;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]),
    };
    if (this.hasPositionIds) {
      const positions = new BigInt64Array(n);
      for (let i = 0; i < n; i++) positions[i] = BigInt(packed ? packed.positions[i]! : pastLength + i);
      feeds.position_ids = new ort.Tensor('int64', positions, [1, n]);
    }
    if (this.biased)
      feeds[BIAS_INPUT] = packed
        ? new ort.Tensor('float32', packed.bias, [n, total])
        : new ort.Tensor('float32', new Float32Array(1), [1, 1]);
    // HF's num_logits_to_keep: 0 means all, so a prefix pass keeps 1.
    if (this.logitsToKeepName)
      feeds[this.logitsToKeepName] = new ort.Tensor('int64', BigInt64Array.of(BigInt(Math.max(1, keep))), []);
    if (this.rewritten) {
      // The positions read: the last `keep` of a plain pass (none for a prefix pass: no projection at all).
      const reads = packed?.reads ?? Array.from({ length: keep }, (_, j) => n - keep + j);
      feeds[POSITIONS_INPUT] = new ort.Tensor('int64', BigInt64Array.from(reads, BigInt), [reads.length]);
      const width = Math.max(1, ...candidates.map((c) => c.length));
      const ids64 = new BigInt64Array(keep * width);
      candidates.forEach((row, j) => {
        for (let c = 0; c < width; c++) ids64[j * width + c] = BigInt(row[c] ?? row[0] ?? 0);
      });
      feeds[CANDIDATES_INPUT] = new ort.Tensor('int64', ids64, [1, keep, width]);
      feeds[INV_TEMPERATURE_INPUT] = new ort.Tensor('float32', Float32Array.of(1 / this.temperature), []);
    }
    for (const name of this.pastNames) feeds[name] = past?.tensors.get(name) ?? this.emptyPast();
    return feeds;
  }

  private collectPresent(out: ort.InferenceSession.OnnxValueMapType, pastLength: number, n: number): KvCache {
    const tensors = new Map<string, ort.Tensor>();
    let bytes = 0;
    for (const name of this.pastNames) {
      const t = output(out, this.presentOf.get(name)!);
      tensors.set(name, t);
      bytes += (t.data as ArrayBufferView).byteLength;
    }
    return { tensors, length: pastLength + n, bytes };
  }

  async close(): Promise<void> {
    await this.session.release();
  }

  /** Bytes of KV cache one token takes (every layer's key and value). */
  get kvBytesPerToken(): number {
    return this.pastNames.length * this.kvHeads * this.headDim * (this.kvType === 'float32' ? 4 : 2);
  }

  private emptyPast(): ort.Tensor {
    const data = this.kvType === 'float32' ? new Float32Array(0) : new Uint16Array(0);
    return new ort.Tensor(this.kvType, data, [1, this.kvHeads, 0, this.headDim]);
  }

  /** The last `count` rows of a [1, seq, vocab] logits tensor, as float32. */
  private logitRows(tensor: ort.Tensor, count: number): Float32Array[] {
    const [, seq = 0, vocab = 0] = tensor.dims;
    const rows: Float32Array[] = [];
    for (let p = seq - count; p < seq; p++) {
      if (tensor.type === 'float16')
        rows.push(halfToFloat((tensor.data as Uint16Array).subarray(p * vocab, (p + 1) * vocab)));
      else rows.push((tensor.data as Float32Array).subarray(p * vocab, (p + 1) * vocab));
    }
    return rows;
  }
}

/**
 * log softmax(logits / T)[token], computed in float64; a reader over one distribution. Used when the
 * graph could not be rewritten and full logits come back.
 */
export function logSoftmaxAt(logits: Float32Array, temperature: number): (token: number) => number {
  let max = -Infinity;
  for (const x of logits) if (x > max) max = x;
  let sum = 0;
  for (const x of logits) sum += Math.exp((x - max) / temperature);
  const logZ = Math.log(sum);
  return (token) => ((logits[token] ?? -Infinity) - max) / temperature - logZ;
}

/** Where the pieces of a prefill of `length` tokens after `past` end (chunk base `base`; 0: one piece). */
export function prefillEnds(length: number, past: number, base: number): number[] {
  if (base <= 0) return [length];
  const ends: number[] = [];
  for (let end = 0; end < length;) ends.push((end = Math.min(length, end + chunkFor(base, past + end))));
  return ends;
}

/** Chunk size for a prefill piece after `past` tokens: the base, doubled at 4× and 16× the base of past. */
function chunkFor(base: number, past: number): number {
  if (past >= 16 * base) return 4 * base;
  if (past >= 4 * base) return 2 * base;
  return base;
}

/** An output the pass fetched; onnxruntime returns every fetched name, so a missing one is an engine fault. */
function output(out: ort.InferenceSession.OnnxValueMapType, name: string): ort.Tensor {
  const t = out[name];
  if (!t) throw new EngineError(`onnxruntime returned no ${name} output`);
  return t;
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

function halfToFloat(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i]!;
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    if (exp === 0) out[i] = sign * 2 ** -14 * (frac / 1024);
    else if (exp === 31) out[i] = frac ? NaN : sign * Infinity;
    else out[i] = sign * 2 ** (exp - 15) * (1 + frac / 1024);
  }
  return out;
}
