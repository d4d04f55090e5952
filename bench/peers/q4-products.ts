// One matrix product of the 0.5b shape at a time, in the forms a 4-bit or int8 export can run as, on
// onnxruntime's CPU kernels: what each form costs per row count (decode M = 1 to prefill M = 512),
// and so where a whole pass's time goes (docs/peers.md, "Why the 4-bit kernel is slow"; docs/cpu.md,
// the per-token form's cost). Each (shape, M) times its forms interleaved (A, B, C, …, A, B, C, …),
// so a busy machine slows all alike; the table gives each form's median and its ratio to the int8
// export's own form (DynamicQuantizeMatMul: one activation scale per pass).
//
//   npx tsx bench/peers/q4-products.ts [--rows 1,16,64,256,512] [--rounds 15] [--threads 2] [--shapes q,kv,up,down]
//
// Forms: MatMulNBits (4 bits, block 32, accuracy_level 4: what the q4 exports hold); the export's
// per-tensor int8 product; Assay's per-token int8 product (per-token-int8.ts) on the 4-bit weights
// converted to int8 (q4-to-int8.ts) and on 8-bit weights. Weights are random (a Gaussian), so
// the times are the kernels', not a trained model's.
import { parseArgs } from 'node:util';
import type { onnx } from 'onnx-proto';
import * as ort from 'onnxruntime-node';
import {
  cpuKernels,
  DataType,
  encodeModel,
  int8SessionConfig,
  PerTokenInt8,
  BLOCKED_QUANTIZE_OPSET,
  quantize4,
  requantize,
  seededRandom,
  topologicalOrder,
} from '../../src/internal.js';
import { summarize } from '../lib/stats.js';

type Node = onnx.INodeProto;
type Tensor = onnx.ITensorProto;

/** K → N of the 0.5b shape's products (hidden 896, 2 KV heads of 64, MLP 4,864). */
const SHAPES: Record<string, [number, number]> = { q: [896, 896], kv: [896, 128], up: [896, 4864], down: [4864, 896] };

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1,16,64,256,512' },
    rounds: { type: 'string', default: '15' },
    threads: { type: 'string', default: '2' },
    shapes: { type: 'string', default: 'q,kv,up,down' },
  },
});
const threads = Number(values.threads);
const rounds = Number(values.rounds);

function graph(nodes: Node[], initializer: Tensor[], K: number): Uint8Array {
  const model: onnx.IModelProto = {
    irVersion: 10,
    opsetImport: [
      { domain: '', version: BLOCKED_QUANTIZE_OPSET },
      { domain: 'com.microsoft', version: 1 },
    ],
    graph: {
      name: 'product',
      node: nodes,
      initializer,
      input: [
        {
          name: 'x',
          type: {
            tensorType: {
              elemType: DataType.FLOAT,
              shape: { dim: [{ dimValue: 1 }, { dimParam: 'M' }, { dimValue: K }] },
            },
          },
        },
      ],
      output: [{ name: 'y', type: { tensorType: { elemType: DataType.FLOAT } } }],
    },
  };
  return encodeModel(model as Parameters<typeof encodeModel>[0]);
}

/** The graphs of one K → N product in each form, from one random fp32 weight. */
function forms(K: number, N: number, random: () => number): Record<string, Uint8Array> {
  const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
  const w = Float32Array.from({ length: K * N }, () => gauss() * 0.02);
  const q4 = quantize4(w, K, N, 'w');
  const nbits: Node = {
    opType: 'MatMulNBits',
    domain: 'com.microsoft',
    input: ['x', q4.b.name!, q4.scales.name!],
    output: ['y'],
    attribute: [
      { name: 'K', type: 2, i: K },
      { name: 'N', type: 2, i: N },
      { name: 'bits', type: 2, i: 4 },
      { name: 'block_size', type: 2, i: 32 },
      { name: 'accuracy_level', type: 2, i: 4 },
    ],
  };
  // 8-bit weights per output channel, as an int8 export's per-channel products.
  const scale8 = new Float32Array(N);
  for (let n = 0; n < N; n++)
    for (let k = 0; k < K; k++) scale8[n] = Math.max(scale8[n]!, Math.abs(w[k * N + n]!) / 127);
  const w8 = Int8Array.from({ length: K * N }, (_, i) => Math.round(w[i]! / (scale8[i % N]! || 1)));
  const int8: Tensor[] = [
    { name: 'w8', dataType: DataType.INT8, dims: [K, N], rawData: new Uint8Array(w8.buffer) },
    { name: 'w8_scale', dataType: DataType.FLOAT, dims: [N], rawData: new Uint8Array(scale8.buffer) },
  ];
  const blocks = Math.ceil(K / 32);
  const eightBit = requantize(
    q4.b.rawData!,
    new Float32Array(new Uint8Array(q4.scales.rawData!).buffer, 0, N * blocks),
    undefined,
    K,
    N,
    32,
  );
  const converted: Tensor[] = [
    { name: 'w8c', dataType: DataType.INT8, dims: [K, N], rawData: new Uint8Array(eightBit.weight.buffer) },
    { name: 'w8c_scale', dataType: DataType.FLOAT, dims: [N], rawData: new Uint8Array(eightBit.scales.buffer) },
  ];
  const perToken = (weights: Tensor[]): Uint8Array => {
    const builder = new PerTokenInt8(BLOCKED_QUANTIZE_OPSET, 'p');
    const [weight, weightScale] = [weights[0]!.name!, weights[1]!.name!];
    builder.matMul({ input: 'x', weight, weightScale, depth: K, output: 'y', prefix: 'p' });
    const { initializers } = builder.finish();
    return graph(topologicalOrder(builder.nodes), [...weights, ...initializers], K);
  };
  return {
    MatMulNBits: graph([nbits], [q4.b, q4.scales], K),
    'int8 per tensor': graph(
      [{ opType: 'DynamicQuantizeMatMul', domain: 'com.microsoft', input: ['x', 'w8', 'w8_scale'], output: ['y'] }],
      int8,
      K,
    ),
    'int8 per token': perToken(int8),
    'q4 converted, per token': perToken(converted),
  };
}

const kernels = await cpuKernels();
console.log(`${kernels.cpu} (${kernels.flags}), ${threads} threads; int8 ${kernels.int8}; q4 ${kernels.q4}`);
const extra = await int8SessionConfig();
const random = seededRandom(7);
const header = ['K → N', 'M'];
const lines: string[] = [];
for (const shape of values.shapes!.split(',')) {
  const [K, N] = SHAPES[shape]!;
  const graphs = forms(K, N, random);
  const sessions: Record<string, ort.InferenceSession> = {};
  for (const [name, bytes] of Object.entries(graphs))
    sessions[name] = await ort.InferenceSession.create(bytes, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      logSeverityLevel: 3,
      // Sessions run one after another here: a finished one's threads, spinning, would slow the next.
      extra: { ...extra, session: { ...(extra.session as object | undefined), 'intra_op.allow_spinning': '0' } },
    });
  if (header.length === 2)
    header.push(
      ...Object.keys(sessions).map((n) => `${n} (ms)`),
      'per token / per tensor',
      'q4 converted / MatMulNBits',
    );
  for (const M of values.rows!.split(',').map(Number)) {
    const x = Float32Array.from({ length: M * K }, () => Math.sin(random() * 1000) * (random() < 0.01 ? 6 : 1));
    const feeds = { x: new ort.Tensor('float32', x, [1, M, K]) };
    const times: Record<string, number[]> = {};
    for (let r = 0; r <= rounds; r++) {
      for (const [name, s] of Object.entries(sessions)) {
        const started = performance.now();
        await s.run(feeds);
        if (r > 0) (times[name] ??= []).push(performance.now() - started); // round 0 warms up
      }
    }
    const median = (name: string) => summarize(times[name]!).median;
    lines.push(
      `| ${K} → ${N} | ${M} | ${Object.keys(sessions)
        .map((n) => median(n).toFixed(2))
        .join(
          ' | ',
        )} | ${(median('int8 per token') / median('int8 per tensor')).toFixed(2)}× | ${(median('q4 converted, per token') / median('MatMulNBits')).toFixed(2)}× |`,
    );
    console.error(lines[lines.length - 1]);
  }
  for (const s of Object.values(sessions)) await s.release();
}
console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n${lines.join('\n')}`);
