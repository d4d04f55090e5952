// The decoder graph of a synthetic model: a Llama/Qwen-style decoder (RMSNorm, RoPE, GQA attention,
// SwiGLU MLP, tied embeddings) with the I/O contract of real exports:
//   inputs  input_ids [batch_size, sequence_length] int64
//           attention_mask [batch_size, total_sequence_length] int64
//           position_ids [batch_size, sequence_length] int64          (unless positionIds: false)
//           past_key_values.{i}.key|value [batch_size, kv_heads, past_sequence_length, head_dim] f32
//   outputs logits [batch_size, sequence_length, vocab] f32
//           present.{i}.key|value [batch_size, kv_heads, total_sequence_length, head_dim] f32
// The int8 variant quantizes every MatMul with a constant weight the way onnxruntime's
// quantize_dynamic does (DynamicQuantizeLinear → MatMulInteger → Cast → Mul, int8 symmetric
// per-tensor weights), which onnxruntime fuses into DynamicQuantizeMatMul.
import { DataType, type GraphBuilder } from '../onnx/graph-builder.js';
import { int8Product, type DynamicQuantized } from './int8-product.js';
import { fillRandom } from './random.js';
import type { ShapeManifest } from './shapes.js';
import type { Weights } from './weights.js';

const F = DataType.FLOAT;
const I64 = DataType.INT64;

interface BuildContext {
  g: GraphBuilder;
  seed: number;
  quantized: boolean;
  /** DynamicQuantizeLinear outputs per activation name (shared by q/k/v and gate/up, as quantize_dynamic does). */
  dql: DynamicQuantized;
  /** Trained weights to use instead of random ones (every tensor must be there). */
  weights?: Weights;
}

/** A parameter: the trained tensor when weights are given, else random (seeded by its name). */
function param(ctx: BuildContext, name: string, dims: number[], std: number, mean = 0): Float32Array {
  if (ctx.weights) return ctx.weights.get(name, dims);
  return fillRandom(new Float32Array(dims.reduce((a, b) => a * b, 1)), ctx.seed, name, std, mean);
}

/** x · W for a constant weight W [inDim, outDim]. */
function linear(ctx: BuildContext, x: string, name: string, inDim: number, outDim: number): string {
  return linearWith(ctx, x, name, param(ctx, name, [inDim, outDim], 1 / Math.sqrt(inDim)), inDim, outDim);
}

function linearWith(
  ctx: BuildContext,
  x: string,
  name: string,
  w: Float32Array,
  inDim: number,
  outDim: number,
): string {
  const { g } = ctx;
  if (!ctx.quantized) {
    g.initializer(name, F, [inDim, outDim], w);
    return g.op('MatMul', [x, name]);
  }
  return int8Product(g, x, name, w, [inDim, outDim], ctx.dql);
}

function addBias(ctx: BuildContext, y: string, name: string, dim: number): string {
  const b = ctx.g.initializer(name, F, [dim], param(ctx, name, [dim], 0.1));
  return ctx.g.op('Add', [y, b]);
}

/** RMSNorm over the last axis, in the Pow/ReduceMean/Add/Sqrt/Div/Mul pattern onnxruntime fuses. */
function rmsNorm(ctx: BuildContext, x: string, name: string, dim: number, eps: number): string {
  const { g } = ctx;
  const w = g.initializer(name, F, [dim], param(ctx, name, [dim], 0.05, 1));
  const pow = g.op('Pow', [x, g.scalarF32(2)]);
  const mean = g.op('ReduceMean', [pow], { axes: { ints: [-1] }, keepdims: { i: 1 } });
  const add = g.op('Add', [mean, g.scalarF32(eps)]);
  const sqrt = g.op('Sqrt', [add]);
  const div = g.op('Div', [x, sqrt]);
  return g.op('Mul', [div, w]);
}

/** x·cos + rotate_half(x)·sin for x [B, heads, S, D]; cos/sin [B, 1, S, D]. */
function rope(ctx: BuildContext, x: string, cos: string, sin: string, headDim: number): string {
  const { g } = ctx;
  const half = headDim / 2;
  const [x1, x2] = g.node('Split', [x, g.constI64([half, half])], { outputs: 2, attrs: { axis: { i: -1 } } }) as [
    string,
    string,
  ];
  const neg = g.op('Neg', [x2]);
  const rot = g.op('Concat', [neg, x1], { axis: { i: -1 } });
  return g.op('Add', [g.op('Mul', [x, cos]), g.op('Mul', [rot, sin])]);
}

export function buildDecoder(
  g: GraphBuilder,
  m: ShapeManifest,
  opts: {
    quantized: boolean;
    positionIds: boolean;
    seed: number;
    log?: (s: string) => void;
    /**
     * 'plain' (default): attention in standard ops, as the PyTorch exporter writes it. 'gqa':
     * com.microsoft GroupQueryAttention with rotary inside the op (do_rotary, cos/sin caches),
     * seqlens_k and total_sequence_length computed from attention_mask, as onnxruntime-genai's
     * model builder emits it.
     */
    attention?: 'plain' | 'gqa';
    /** Trained weights instead of random ones (tools/train/train.py writes them). */
    weights?: Weights;
  },
): void {
  const c = m.config;
  const H = c.hidden_size;
  const D = c.head_dim;
  const nH = c.num_attention_heads;
  const kvH = c.num_key_value_heads;
  const rep = nH / kvH;
  const V = c.vocab_size;
  const I = c.intermediate_size;
  const L = c.num_hidden_layers;
  const eps = c.rms_norm_eps;
  if (!Number.isInteger(rep)) throw new Error('num_attention_heads must be a multiple of num_key_value_heads');
  const ctx: BuildContext = { g, seed: opts.seed, quantized: opts.quantized, dql: new Map(), weights: opts.weights };

  // Inputs.
  const inputIds = g.input('input_ids', I64, ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', I64, ['batch_size', 'total_sequence_length']);
  const posIn = opts.positionIds ? g.input('position_ids', I64, ['batch_size', 'sequence_length']) : null;
  for (let i = 0; i < L; i++) {
    for (const kind of ['key', 'value']) {
      g.input(`past_key_values.${i}.${kind}`, F, ['batch_size', kvH, 'past_sequence_length', D]);
    }
  }
  g.output('logits', F, ['batch_size', 'sequence_length', V]);
  for (let i = 0; i < L; i++) {
    for (const kind of ['key', 'value']) {
      g.output(`present.${i}.${kind}`, F, ['batch_size', kvH, 'total_sequence_length', D]);
    }
  }

  // Lengths: seq = S, total = T = past + S, past = T - S (1-D [1] and scalar forms).
  const zero = g.constI64([0]);
  const one = g.constI64([1]);
  const idsShape = g.op('Shape', [inputIds]);
  const seq = g.op('Gather', [idsShape, one], { axis: { i: 0 } });
  const total = g.op('Gather', [g.op('Shape', [mask]), one], { axis: { i: 0 } });
  const past = g.op('Sub', [total, seq]);
  const scalarShape = g.constI64([], [0]);
  const pastS = g.op('Reshape', [past, scalarShape]);
  const totalS = g.op('Reshape', [total, scalarShape]);
  const oneS = g.constI64([1], []);
  const zeroS = g.constI64([0], []);

  // Positions: given, or cumsum(attention_mask) - 1 over the last S columns (what HF computes).
  let pos: string;
  if (posIn) pos = posIn;
  else {
    const cs = g.op('CumSum', [mask, oneS]);
    const pm1 = g.op('Sub', [cs, one]);
    pos = g.op('Slice', [pm1, past, total, one]);
  }

  // Rotary tables: freqs = pos ⊗ inv_freq; emb = [freqs, freqs]; cos/sin as [B, 1, S, D].
  const invFreq = new Float32Array(D / 2);
  for (let i = 0; i < D / 2; i++) invFreq[i] = 1 / Math.pow(c.rope_theta, (2 * i) / D);
  const invFreqName = g.initializer('model.rotary_emb.inv_freq', F, [D / 2], invFreq);
  const posF = g.op('Cast', [pos], { to: { i: F } });
  const freqs = g.op('Mul', [g.op('Unsqueeze', [posF, g.constI64([2])]), invFreqName]);
  const emb = g.op('Concat', [freqs, freqs], { axis: { i: -1 } });
  const cos = g.op('Unsqueeze', [g.op('Cos', [emb]), one]);
  const sin = g.op('Unsqueeze', [g.op('Sin', [emb]), one]);

  // Mask [B, 1, 1, S, T]: key j visible to query i (absolute past + i) iff j <= past + i and mask[b, j] = 1.
  const qIdx = g.op('Range', [pastS, totalS, oneS]);
  const kIdx = g.op('Range', [zeroS, totalS, oneS]);
  const causal = g.op('LessOrEqual', [g.op('Unsqueeze', [kIdx, zero]), g.op('Unsqueeze', [qIdx, one])]);
  const pad = g.op('Unsqueeze', [g.op('Cast', [mask], { to: { i: DataType.BOOL } }), g.constI64([1, 2, 3])]);
  const allowed = g.op('And', [causal, pad]);
  // Additive float mask, built once for all layers (as HF's eager attention adds its causal mask):
  // a per-layer Where over the scores costs more than the attention matmuls on long contexts.
  // -1e9 rather than the float minimum keeps fully masked (left-padding) rows finite.
  const maskBias = g.op('Where', [allowed, g.scalarF32(0), g.scalarF32(-1e9)]);
  const scale = g.scalarF32(1 / Math.sqrt(D));

  // GroupQueryAttention's inputs (genai builder): seqlens_k = sum(mask) - 1 (int32, [B]), total
  // sequence length (int32 scalar), and rotary caches [max_positions, head_dim / 2].
  const gqa = opts.attention === 'gqa';
  let seqlensK = '';
  let totalLen = '';
  let cosCache = '';
  let sinCache = '';
  if (gqa) {
    if (m.qk_norm) throw new Error('the gqa flavor does not support qk_norm shapes');
    const sum = g.op('ReduceSum', [mask, one], { keepdims: { i: 0 } });
    seqlensK = g.op('Cast', [g.op('Sub', [sum, oneS])], { to: { i: DataType.INT32 } });
    totalLen = g.op('Cast', [totalS], { to: { i: DataType.INT32 } });
    const positions = c.max_position_embeddings;
    const cosT = new Float32Array(positions * (D / 2));
    const sinT = new Float32Array(positions * (D / 2));
    for (let p = 0; p < positions; p++) {
      for (let i = 0; i < D / 2; i++) {
        const angle = Math.fround(Math.fround(p) * invFreq[i]!);
        cosT[p * (D / 2) + i] = Math.cos(angle);
        sinT[p * (D / 2) + i] = Math.sin(angle);
      }
    }
    cosCache = g.initializer('cos_cache', F, [positions, D / 2], cosT);
    sinCache = g.initializer('sin_cache', F, [positions, D / 2], sinT);
  }

  // Embedding (fp32 Gather in both dtypes), tied with the LM head.
  const embed = param(ctx, 'model.embed_tokens.weight', [V, H], 2 / Math.sqrt(H));
  const embedName = g.initializer('model.embed_tokens.weight', F, [V, H], embed);
  let x = g.op('Gather', [embedName, inputIds], { axis: { i: 0 } });

  for (let i = 0; i < L; i++) {
    const p = `model.layers.${i}`;
    const h = rmsNorm(ctx, x, `${p}.input_layernorm.weight`, H, eps);
    const proj = (n: string, heads: number): string => {
      let y = linear(ctx, h, `${p}.self_attn.${n}_proj.weight`, H, heads * D);
      if (m.qkv_bias) y = addBias(ctx, y, `${p}.self_attn.${n}_proj.bias`, heads * D);
      y = g.op('Reshape', [y, g.constI64([0, 0, heads, D])]);
      if (m.qk_norm && n !== 'v') y = rmsNorm(ctx, y, `${p}.self_attn.${n}_norm.weight`, D, eps);
      return g.op('Transpose', [y], { perm: { ints: [0, 2, 1, 3] } });
    };
    let attn: string;
    if (gqa) {
      const flat = (n: string, heads: number): string => {
        const y = linear(ctx, h, `${p}.self_attn.${n}_proj.weight`, H, heads * D);
        return m.qkv_bias ? addBias(ctx, y, `${p}.self_attn.${n}_proj.bias`, heads * D) : y;
      };
      attn = g.node(
        'GroupQueryAttention',
        [
          flat('q', nH),
          flat('k', kvH),
          flat('v', kvH),
          `past_key_values.${i}.key`,
          `past_key_values.${i}.value`,
          seqlensK,
          totalLen,
          cosCache,
          sinCache,
        ],
        {
          outputs: [g.fresh('attn'), `present.${i}.key`, `present.${i}.value`],
          domain: 'com.microsoft',
          attrs: {
            num_heads: { i: nH },
            kv_num_heads: { i: kvH },
            do_rotary: { i: 1 },
            rotary_interleaved: { i: 0 },
            scale: { f: 1 / Math.sqrt(D) },
          },
        },
      )[0]!;
    } else {
      const q = rope(ctx, proj('q', nH), cos, sin, D);
      const k = rope(ctx, proj('k', kvH), cos, sin, D);
      const v = proj('v', kvH);
      const presentK = g.node('Concat', [`past_key_values.${i}.key`, k], {
        outputs: [`present.${i}.key`],
        attrs: { axis: { i: 2 } },
      })[0]!;
      const presentV = g.node('Concat', [`past_key_values.${i}.value`, v], {
        outputs: [`present.${i}.value`],
        attrs: { axis: { i: 2 } },
      })[0]!;
      // GQA without copying KV: queries as [B, kvH, rep, S, D] against keys [B, kvH, 1, D, T].
      const q5 = g.op('Reshape', [q, g.constI64([0, kvH, rep, -1, D])]);
      const k5 = g.op('Transpose', [g.op('Unsqueeze', [presentK, g.constI64([2])])], {
        perm: { ints: [0, 1, 2, 4, 3] },
      });
      const scores = g.op('Mul', [g.op('MatMul', [q5, k5]), scale]);
      const masked = g.op('Add', [scores, maskBias]);
      const probs = g.op('Softmax', [masked], { axis: { i: -1 } });
      const ctx5 = g.op('MatMul', [probs, g.op('Unsqueeze', [presentV, g.constI64([2])])]);
      const ctx4 = g.op('Transpose', [g.op('Reshape', [ctx5, g.constI64([0, nH, -1, D])])], {
        perm: { ints: [0, 2, 1, 3] },
      });
      attn = g.op('Reshape', [ctx4, g.constI64([0, 0, nH * D])]);
    }
    x = g.op('Add', [x, linear(ctx, attn, `${p}.self_attn.o_proj.weight`, nH * D, H)]);

    const h2 = rmsNorm(ctx, x, `${p}.post_attention_layernorm.weight`, H, eps);
    const gate = linear(ctx, h2, `${p}.mlp.gate_proj.weight`, H, I);
    const up = linear(ctx, h2, `${p}.mlp.up_proj.weight`, H, I);
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    x = g.op('Add', [x, linear(ctx, act, `${p}.mlp.down_proj.weight`, I, H)]);
    opts.log?.(`layer ${i + 1}/${L}`);
  }

  const hf = rmsNorm(ctx, x, 'model.norm.weight', H, eps);
  if (!ctx.quantized) {
    // Tied head as the PyTorch exporter writes it: MatMul of the final hidden state [batch, seq, H]
    // by the transposed embedding (onnxruntime folds the Transpose into one constant at load).
    const embT = g.op('Transpose', [embedName], { perm: { ints: [1, 0] } });
    g.node('MatMul', [hf, embT], { outputs: ['logits'] });
  } else {
    // The quantized head is its own transposed int8 initializer, as quantize_dynamic makes it.
    const wT = new Float32Array(H * V);
    for (let v = 0; v < V; v++) for (let j = 0; j < H; j++) wT[j * V + v] = embed[v * H + j]!;
    const y = linearWith(ctx, hf, 'lm_head.weight', wT, H, V);
    g.node('Identity', [y], { outputs: ['logits'] });
  }
}
