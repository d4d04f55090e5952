// What per-token activation quantization (src/engine/model/per-token-int8.ts) does to a dynamic int8
// export's accuracy: the export run as exported (one activation scale per pass) and with the
// per-token rewrite, each against its fp32 twin (same weights), over one pass of the same token ids.
// Numbers, not timings: run it on each CPU class (an AVX2 one under emulation:
// `qemu-x86_64 -cpu Haswell-noTSX node …`, docs/cpu.md).
//
//   npx tsx bench/engine/per-token-error.ts [--shape tiny|qwen2.5-0.5b|tiny-tasks-1] [--tokens 128] [--threads 2]
import { parseArgs } from 'node:util';
import { cpuKernels, ensureSynthModel, ModelRunner, openModelFolder, type ShapeName } from '../../src/internal.js';
import { distance, DISTANCE_COLUMNS, formatDistance } from '../lib/distance.js';

const { values } = parseArgs({
  options: {
    shape: { type: 'string', default: 'qwen2.5-0.5b' },
    tokens: { type: 'string', default: '128' },
    threads: { type: 'string', default: '2' },
  },
});
/** tiny-tasks-1: the tiny shape with the weights trained in this repository (models/README.md). */
const trained = values.shape === 'tiny-tasks-1';
const shape = (trained ? 'tiny' : values.shape) as ShapeName;
const twin = (dtype: 'fp32' | 'int8') =>
  ensureSynthModel(
    trained
      ? { shape, dtype, weights: 'models/trained/tiny-tasks.safetensors', out: `models/generated/tiny-tasks-${dtype}` }
      : { shape, dtype },
  );
const threads = Number(values.threads);
/** Token ids spread over the vocabulary (no tokenizer needed: numerics only). */
const ids = Array.from({ length: Number(values.tokens) }, (_, i) => (i * 7919 + 13) % 150000);

async function logits(modelDir: string, perTokenInt8 = true): Promise<Float32Array[]> {
  const runner = await ModelRunner.create(await openModelFolder(modelDir), { modelDir, threads, perTokenInt8 });
  try {
    return await runner.logits(ids);
  } finally {
    await runner.close();
  }
}

const k = await cpuKernels();
console.log(`${k.cpu} (${k.flags}); int8 ${k.int8}; shape ${values.shape}, ${ids.length} tokens, every position`);
const reference = await logits(await twin('fp32'));
const int8 = await twin('int8');
console.log(`against the fp32 twin: ${DISTANCE_COLUMNS}`);
console.log(`| per tensor (as exported) | ${formatDistance(distance(await logits(int8, false), reference))} |`);
console.log(`| per token (Assay's default) | ${formatDistance(distance(await logits(int8, true), reference))} |`);
