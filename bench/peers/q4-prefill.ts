// Prefill of the 0.5b shape's q4 export on its two paths (through the int8 kernels, and onnxruntime's
// native MatMulNBits) next to the int8 export, interleaved in one process (A, B, C, A, B, C, ...), so
// a busy machine slows all three alike. The bench's peers section compares the default path with
// llama.cpp; this isolates what the conversion changes.
//
//   npx tsx bench/peers/q4-prefill.ts [--tokens 256,512] [--rounds 3] [--threads 2]
import { parseArgs } from 'node:util';
import { cpuKernels, ensureSynthModel, ModelRunner, openModelFolder } from '../../src/internal.js';
import { ensureFlavor } from '../../tools/flavors.js';

const { values } = parseArgs({
  options: {
    tokens: { type: 'string', default: '256,512' },
    rounds: { type: 'string', default: '3' },
    threads: { type: 'string', default: '2' },
  },
});
const threads = Number(values.threads);
const kernels = await cpuKernels();
console.log(`${kernels.cpu} (${kernels.flags}), ${threads} threads; int8 ${kernels.int8}; q4 ${kernels.q4}`);

const q4Dir = await ensureFlavor({ shape: 'qwen2.5-0.5b', dtype: 'q4' });
const int8Dir = await ensureSynthModel({ shape: 'qwen2.5-0.5b', dtype: 'int8' });
const runners = {
  'q4, int8 kernels': await ModelRunner.create(await openModelFolder(q4Dir, 'q4'), { modelDir: q4Dir, threads }),
  'q4, native MatMulNBits': await ModelRunner.create(await openModelFolder(q4Dir, 'q4'), {
    modelDir: q4Dir,
    threads,
    q4Kernels: 'native',
  }),
  int8: await ModelRunner.create(await openModelFolder(int8Dir, 'int8'), { modelDir: int8Dir, threads }),
};
for (const n of values.tokens!.split(',').map(Number)) {
  const ids = Array.from({ length: n }, (_, i) => 1000 + ((i * 7919) % 30000));
  const times = new Map<string, number[]>();
  for (let round = 0; round <= Number(values.rounds); round++) {
    for (const [name, runner] of Object.entries(runners)) {
      const started = performance.now();
      await runner.forward(ids, null, [[0]], false);
      if (round > 0) times.set(name, [...(times.get(name) ?? []), performance.now() - started]); // round 0 warms up
    }
  }
  for (const [name, t] of times) {
    const median = [...t].sort((a, b) => a - b)[Math.floor(t.length / 2)]!;
    console.log(
      `prefill ${n} tokens, ${name}: ${Math.round((n / median) * 1000)} tok/s (median of ${t.length}: ${t.map((x) => Math.round(x)).join(', ')} ms)`,
    );
  }
}
for (const runner of Object.values(runners)) await runner.close();
