// The model runner: one onnxruntime session and its I/O contract, discovered from the session's
// metadata and config.json (no architecture is hard-coded). Everything that touches tensors is here.
import * as ort from 'onnxruntime-node';
import { ModelLoadError } from './errors.js';
import type { ModelFolder } from './model-folder.js';
import type { EngineConfig } from './config.js';

/** Keys and values of every layer for `length` tokens, as the session's present.* outputs gave them. */
export interface KvCache {
  /** past_key_values.* input name → tensor [1, kv_heads, length, head_dim] */
  tensors: Map<string, ort.Tensor>;
  length: number;
  bytes: number;
}

export interface ForwardResult {
  /** One row of vocabulary logits per requested position (float32, raw). */
  logits: Float32Array[];
  present?: KvCache;
}

export type LogitsWanted = 'none' | 'last' | 'all';

export class ModelRunner {
  private readonly pastNames: string[];
  /** past input name → present output name */
  private readonly presentOf = new Map<string, string>();
  private readonly hasPositionIds: boolean;
  private readonly logitsToKeepName: string | undefined;
  private readonly kvType: 'float32' | 'float16';
  private readonly kvHeads: number;
  private readonly headDim: number;
  readonly vocabSize: number;

  private constructor(
    private readonly session: ort.InferenceSession,
    folder: ModelFolder,
  ) {
    const inputs = session.inputNames;
    const outputs = new Set(session.outputNames);
    for (const required of ['input_ids', 'attention_mask']) {
      if (!inputs.includes(required)) throw new ModelLoadError(`${folder.onnxPath}: no ${required} input: not a decoder export`);
    }
    if (!outputs.has('logits')) throw new ModelLoadError(`${folder.onnxPath}: no logits output: not a causal LM export`);
    this.pastNames = inputs.filter((n) => n.startsWith('past_key_values.'));
    if (this.pastNames.length === 0) {
      throw new ModelLoadError(`${folder.onnxPath}: no past_key_values.* inputs: export it with a KV cache (text-generation-with-past)`);
    }
    for (const name of this.pastNames) {
      const present = name.replace(/^past_key_values\./, 'present.');
      if (!outputs.has(present)) throw new ModelLoadError(`${folder.onnxPath}: input ${name} has no matching ${present} output`);
      this.presentOf.set(name, present);
    }
    this.hasPositionIds = inputs.includes('position_ids');
    this.logitsToKeepName = inputs.find((n) => n === 'num_logits_to_keep' || n === 'logits_to_keep');

    const meta = session.inputMetadata.find((m) => m.name === this.pastNames[0]);
    const shape = meta && meta.isTensor ? meta.shape : [];
    const type = meta && meta.isTensor ? meta.type : 'float32';
    if (type !== 'float32' && type !== 'float16') throw new ModelLoadError(`${folder.onnxPath}: KV cache type ${type} is not supported`);
    this.kvType = type;
    const c = folder.config;
    const heads = num(c.num_attention_heads);
    this.kvHeads = typeof shape[1] === 'number' ? shape[1] : num(c.num_key_value_heads) || heads;
    this.headDim = typeof shape[3] === 'number' ? shape[3] : num(c.head_dim) || num(c.hidden_size) / heads;
    if (!this.kvHeads || !this.headDim) throw new ModelLoadError(`${folder.dir}/config.json: cannot tell the KV cache shape (num_key_value_heads, head_dim)`);
    this.vocabSize = num(c.vocab_size);
  }

  static async create(folder: ModelFolder, config: EngineConfig): Promise<ModelRunner> {
    const provider = config.provider ?? 'cpu';
    const options: ort.InferenceSession.SessionOptions = {
      executionProviders: provider === 'cuda' ? ['cuda', 'cpu'] : ['cpu'],
      graphOptimizationLevel: config.graphOptimization ?? 'all',
      intraOpNumThreads: config.threads ?? 0,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      logSeverityLevel: 3,
    };
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(folder.onnxPath, options);
    } catch (error) {
      const message = (error as Error).message;
      if (provider === 'cuda') {
        throw new ModelLoadError(
          `cannot start the CUDA execution provider (${message}). Install onnxruntime-node with its CUDA 12 binaries ` +
            '(npm ci --onnxruntime-node-install=cuda12) on a machine with an NVIDIA driver, CUDA 12 and cuDNN 9, or set the provider to cpu.',
        );
      }
      throw new ModelLoadError(`${folder.onnxPath}: onnxruntime cannot load it (${message})`);
    }
    return new ModelRunner(session, folder);
  }

  /** Bytes one token's keys and values take over all layers. */
  get kvBytesPerToken(): number {
    return this.pastNames.length * this.kvHeads * this.headDim * (this.kvType === 'float32' ? 4 : 2);
  }

  /**
   * Runs `ids` after `past` (batch 1). Fetches only what is asked for: the logits of the last or of
   * every new position, and the present KV only when a later pass will continue from it.
   */
  async forward(ids: number[], past: KvCache | null, logits: LogitsWanted, present: boolean): Promise<ForwardResult> {
    const pastLength = past?.length ?? 0;
    const n = ids.length;
    const total = pastLength + n;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]),
    };
    if (this.hasPositionIds) {
      const positions = new BigInt64Array(n);
      for (let i = 0; i < n; i++) positions[i] = BigInt(pastLength + i);
      feeds.position_ids = new ort.Tensor('int64', positions, [1, n]);
    }
    if (this.logitsToKeepName) {
      const keep = logits === 'all' ? n : 1;
      feeds[this.logitsToKeepName] = new ort.Tensor('int64', BigInt64Array.from([BigInt(keep)]), []);
    }
    for (const name of this.pastNames) feeds[name] = past?.tensors.get(name) ?? this.emptyPast();

    const fetches: string[] = [];
    if (logits !== 'none') fetches.push('logits');
    if (present) for (const name of this.pastNames) fetches.push(this.presentOf.get(name)!);
    const out = await this.session.run(feeds, fetches);

    const result: ForwardResult = { logits: [] };
    if (logits !== 'none') result.logits = this.logitRows(out.logits, logits === 'all' ? n : 1);
    if (present) {
      const tensors = new Map<string, ort.Tensor>();
      let bytes = 0;
      for (const name of this.pastNames) {
        const t = out[this.presentOf.get(name)!];
        tensors.set(name, t);
        bytes += (t.data as ArrayBufferView).byteLength;
      }
      result.present = { tensors, length: total, bytes };
    }
    return result;
  }

  async close(): Promise<void> {
    await this.session.release();
  }

  private emptyPast(): ort.Tensor {
    const data = this.kvType === 'float32' ? new Float32Array(0) : new Uint16Array(0);
    return new ort.Tensor(this.kvType, data, [1, this.kvHeads, 0, this.headDim]);
  }

  /** The last `count` rows of a [1, seq, vocab] logits tensor, as float32. */
  private logitRows(tensor: ort.Tensor, count: number): Float32Array[] {
    const vocab = tensor.dims[2];
    const seq = tensor.dims[1];
    const rows: Float32Array[] = [];
    for (let p = seq - count; p < seq; p++) {
      if (tensor.type === 'float16') rows.push(halfToFloat((tensor.data as Uint16Array).subarray(p * vocab, (p + 1) * vocab)));
      else rows.push((tensor.data as Float32Array).subarray(p * vocab, (p + 1) * vocab));
    }
    return rows;
  }
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

function halfToFloat(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i];
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    if (exp === 0) out[i] = sign * 2 ** -14 * (frac / 1024);
    else if (exp === 31) out[i] = frac ? NaN : sign * Infinity;
    else out[i] = sign * 2 ** (exp - 15) * (1 + frac / 1024);
  }
  return out;
}
