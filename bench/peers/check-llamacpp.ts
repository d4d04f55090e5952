// npm run check:llamacpp — an independent implementation agrees with ours: the same synthetic
// weights as a GGUF (models/gguf), the same token ids (a chat-templated question rendered and
// tokenized by our engine), last-position logits from llama.cpp and from our ONNX graph.
// Pass: F32 max |Δ| ≤ 1e-4 on the tiny and the qwen2.5-0.5b shapes. Q8_0 / Q4_0 are reported.
// Options: --shapes tiny,qwen2.5-0.5b  --types F32,Q8_0,Q4_0
import { parseArgs } from 'node:util';
import { ensureSynthModel, ModelRunner, openModelFolder, TextCodec, type ShapeName } from '../../src/internal.js';
import { writeQwenGguf } from '../../tools/gguf/qwen2.js';
import { loadNodeLlamaCpp } from './llamacpp.js';

const { values } = parseArgs({
  options: { shapes: { type: 'string', default: 'tiny,qwen2.5-0.5b' }, types: { type: 'string', default: 'F32,Q8_0' } },
});
const log = (line: string) => process.stderr.write(`${line}\n`);
const TOLERANCE = 1e-4;
const argmax = (xs: ArrayLike<number>) => {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i]! > xs[best]!) best = i;
  return best;
};

const peer = await loadNodeLlamaCpp(log);
if (typeof peer === 'string') {
  log(`SKIPPED: ${peer}`);
  process.exit(0);
}
// build: 'never': only the prebuilt CPU binary; no compiler, no download. When it cannot load here, skip.
const llama = await peer
  .getLlama({ gpu: false, build: 'never', maxThreads: 2, logLevel: 'error' })
  .catch((error: Error) => {
    log(`SKIPPED: llama.cpp's prebuilt CPU binary does not load here (${error.message.split('\n')[0]})`);
    process.exit(0);
  });
let failed = false;
const rows: string[] = [
  '| shape | type | tokens | max abs Δ logit vs our fp32 | vs our int8 | argmax ours / llama.cpp | seconds |',
  '|---|---|---|---|---|---|---|',
];
for (const shape of values.shapes.split(',') as ShapeName[]) {
  const dir = await ensureSynthModel({ shape, dtype: 'fp32', log });
  const codec = await TextCodec.load(dir);
  const prompt = codec.renderChat(
    [
      {
        role: 'system',
        content:
          'You are a careful evaluator.\n\nContent:\nThe parcel with order A-1043 arrived two days late; the box was crushed on one side. 日本語 🦊',
      },
      { role: 'user', content: 'Question: Was the parcel late?\nAnswer with Yes or No.' },
    ],
    true,
  );
  const ids = codec.encode(prompt);
  const lastLogits = async (modelDir: string, variant: string) => {
    const runner = await ModelRunner.create(await openModelFolder(modelDir, variant), {
      modelDir,
      threads: 2,
      rewriteGraph: false,
    });
    const all = await runner.logits(ids);
    await runner.close();
    const last = all[all.length - 1];
    if (!last) throw new Error('onnxruntime returned no logits');
    return last;
  };
  const ours = await lastLogits(dir, 'fp32');
  // Our int8 export of the same weights: the same-class reference for Q8_0 (reported, not judged).
  const int8Dir = await ensureSynthModel({ shape, dtype: 'int8', log });
  const oursInt8 = await lastLogits(int8Dir, 'quantized');
  const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
    let m = 0;
    for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
    return m;
  };
  rows.push(
    `| ${shape} | ours int8 | ${ids.length} | ${maxAbs(ours, oursInt8).toExponential(2)} | – | ${argmax(ours)} / ${argmax(oursInt8)} (ours int8) | – |`,
  );
  for (const type of values.types.split(',') as Array<'F32' | 'Q8_0' | 'Q4_0'>) {
    const t0 = performance.now();
    const path = writeQwenGguf(dir, type);
    const model = await llama.loadModel({ modelPath: path });
    // F32 KV cache and no flash attention: the comparison is of the model, not of cache precision.
    const context = await model.createContext({
      contextSize: 1024,
      batchSize: 1024,
      threads: { ideal: 2, min: 2 },
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
    });
    const out = await context
      .getSequence()
      .controlledEvaluate(ids.map((id, i) => (i === ids.length - 1 ? [id, { generateNext: { logits: true } }] : id)));
    const theirs = out[ids.length - 1]?.next?.logits;
    if (!theirs) throw new Error('llama.cpp returned no logits');
    const dense = new Float32Array(ours.length);
    for (const [token, v] of theirs) dense[token] = v;
    let max = 0;
    let worst = 0;
    for (let i = 0; i < ours.length; i++) {
      const d = Math.abs(ours[i]! - dense[i]!);
      if (d > max) [max, worst] = [d, i];
    }
    log(
      `  ${shape} ${type}: worst token ${worst} (ours ${ours[worst]}, llama.cpp ${dense[worst]}, ${theirs.size} logits returned)`,
    );
    const pass = type !== 'F32' || max <= TOLERANCE;
    failed ||= !pass;
    rows.push(
      `| ${shape} | ${type} | ${ids.length} | ${max.toExponential(2)}${type === 'F32' ? (pass ? ' (pass)' : ' (FAIL)') : ''} | ${maxAbs(oursInt8, dense).toExponential(2)} | ${argmax(ours)} / ${argmax(dense)} | ${((performance.now() - t0) / 1000).toFixed(1)} |`,
    );
    log(rows[rows.length - 1]!);
    await context.dispose();
    await model.dispose();
  }
}
await llama.dispose();
process.stdout.write(`${rows.join('\n')}\n`);
process.exit(failed ? 1 : 0);
