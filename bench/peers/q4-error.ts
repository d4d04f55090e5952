// What running 4-bit weights through the int8 kernels costs in accuracy: the q4 export as is
// (MatMulNBits), the same export converted at load (src/engine/model/q4-to-int8.ts) and the fp32
// twin (same weights) run one pass of the same token ids; max |Δ logit| and max |Δ P| (softmax over
// the vocabulary) over every position, and two less noisy averages: the root mean square |Δ logit|
// and the mean KL divergence of the next-token distributions. Numbers, not timings: run it on each
// CPU class.
//
//   npx tsx bench/peers/q4-error.ts [--shape tiny|qwen2.5-0.5b] [--tokens 64] [--flavors q4,q4f16,q4-gqa] [--levels 64]
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import {
  Q4_INT8_LEVELS,
  convertQ4ToInt8,
  cpuKernels,
  decodeModel,
  encodeModel,
  inlineExternalData,
  int8SessionConfig,
  openModelFolder,
  type ShapeName,
} from '../../src/internal.js';
import { ensureFlavor, type FlavorOptions } from '../../tools/flavors.js';
import { distance, DISTANCE_COLUMNS, formatDistance } from '../lib/distance.js';

const FLAVORS: Record<string, Omit<FlavorOptions, 'shape'>> = {
  q4: { dtype: 'q4' },
  'q4-acc0': { dtype: 'q4', accuracyLevel: 0 },
  q4f16: { dtype: 'q4f16' },
  'q4-gqa': { dtype: 'q4', attention: 'gqa', layout: 'genai' },
};

interface Logits {
  data: Float32Array;
  vocab: number;
}

async function onnxPath(o: FlavorOptions): Promise<string> {
  return (await openModelFolder(await ensureFlavor(o))).onnxPath;
}

/** A session as the engine makes it: the exact int8 setting where this CPU's fast int8 kernel saturates. */
async function session(model: string | Uint8Array, threads: number): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(model as Uint8Array, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    extra: await int8SessionConfig(),
  });
}

/** One pass of `ids` from an empty cache; the logits of every position as float32. */
async function logits(s: ort.InferenceSession, ids: number[]): Promise<Logits> {
  const feeds: Record<string, ort.Tensor> = {};
  const T = ids.length;
  for (const m of s.inputMetadata) {
    if (!m.isTensor) continue;
    const dims = m.shape;
    if (m.name === 'input_ids') feeds[m.name] = new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, T]);
    else if (m.name === 'attention_mask')
      feeds[m.name] = new ort.Tensor('int64', new BigInt64Array(T).fill(1n), [1, T]);
    else if (m.name === 'position_ids')
      feeds[m.name] = new ort.Tensor(
        'int64',
        BigInt64Array.from(ids, (_, i) => BigInt(i)),
        [1, T],
      );
    else {
      // past key/value: [batch, kv_heads, 0, head_dim], empty.
      const shape = dims.map((d, i) => (i === 0 ? 1 : i === 2 ? 0 : Number(d)));
      feeds[m.name] =
        m.type === 'float16'
          ? new ort.Tensor('float16', new Uint16Array(0), shape)
          : new ort.Tensor('float32', new Float32Array(0), shape);
    }
  }
  const out = (await s.run(feeds)).logits!;
  const vocab = Number(out.dims[out.dims.length - 1]);
  const data =
    out.type === 'float16'
      ? Float32Array.from(out.data as Uint16Array, halfToFloat)
      : new Float32Array(out.data as Float32Array);
  return { data, vocab };
}

function halfToFloat(h: number): number {
  const e = (h >> 10) & 31;
  const f = h & 1023;
  const v = e === 0 ? f * 2 ** -24 : e === 31 ? (f ? NaN : Infinity) : (1 + f / 1024) * 2 ** (e - 15);
  return h & 0x8000 ? -v : v;
}

/** One Float32Array of vocabulary logits per position. */
function rows(l: Logits): Float32Array[] {
  return Array.from({ length: l.data.length / l.vocab }, (_, i) => l.data.subarray(i * l.vocab, (i + 1) * l.vocab));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      shape: { type: 'string', default: 'tiny' },
      tokens: { type: 'string', default: '64' },
      flavors: { type: 'string', default: 'q4,q4f16,q4-gqa' },
      threads: { type: 'string', default: '2' },
      // Largest |int8| of the converted weights (127, the default: 8 bits; 64: the 7 bits of the first form).
      levels: { type: 'string', default: String(Q4_INT8_LEVELS) },
    },
  });
  const shape = values.shape as ShapeName;
  const T = Number(values.tokens);
  const threads = Number(values.threads);
  const kernels = await cpuKernels();
  console.log(`${kernels.cpu} (${kernels.flags}); shape ${shape}, ${T} tokens, every position`);
  console.log(`converted weights: |int8| ≤ ${values.levels}; each cell: ${DISTANCE_COLUMNS}`);
  console.log('| flavor | converted vs q4 as is | q4 as is vs fp32 | converted vs fp32 |');
  console.log('|---|---|---|---|');
  for (const name of values.flavors!.split(',')) {
    const flavor = { ...FLAVORS[name]!, shape };
    const twinFlavor: FlavorOptions = {
      dtype: 'fp32',
      shape,
      ...(flavor.attention ? { attention: flavor.attention, layout: flavor.layout } : {}),
    };
    // A fixed pseudo-random token sequence (no tokenizer needed: numerics only).
    let seed = 12345;
    const vocab = Number((await openModelFolder(await ensureFlavor(twinFlavor))).config.vocab_size);
    const ids = Array.from({ length: T }, () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % vocab));
    const twin = await logits(await session(await onnxPath(twinFlavor), threads), ids);
    const q4File = await onnxPath(flavor);
    const asIs = await logits(await session(q4File, threads), ids);
    const model = decodeModel(readFileSync(q4File));
    inlineExternalData(model, dirname(q4File));
    const conversion = convertQ4ToInt8(model, Number(values.levels));
    const converted = await logits(await session(encodeModel(model), threads), ids);
    const f = (a: Logits, b: Logits) => formatDistance(distance(rows(a), rows(b)));
    console.log(
      `| ${name} (${conversion.nodes} products) | ${f(converted, asIs)} | ${f(asIs, twin)} | ${f(converted, twin)} |`,
    );
  }
}

await main();
