// A one-off check of the Laya replica at a real shape (not a test: it writes gigabytes and takes
// minutes): the graphs load in onnxruntime-node and run one batch of 1 × 512 tokens. Prints, per
// flavor, the load time, the run time (p50 of 5 runs after one warm-up) and the process's RSS,
// each flavor in its own process so the RSS is that flavor's alone. int8 runs as the engine runs
// it (int8SessionConfig: the exact kernel where the default one saturates); `int8-default` runs
// onnxruntime's default int8 kernel, for comparison.
//
//   npx tsx tools/families/laya/shape-check.ts [SHAPE [fp32,int8,int8-default,fp16]] [--threads N]
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { int8SessionConfig, seededRandom } from '../../../src/internal.js';
import { ensureLayaReplicaShape, LAYA_SHAPES, type LayaFlavor, type LayaShapeName } from './replica.js';

const FILES: Record<string, string> = {
  fp32: 'model.onnx',
  fp16: 'model_fp16.onnx',
  int8: 'model_quantized.onnx',
  'int8-default': 'model_quantized.onnx',
};
const TOKENS = 512;
const MARKERS = 10;

/** One row of TOKENS ids: [CLS] text [SEP] ([MASK] + 5 tokens) × MARKERS [SEP] state [SEP]. */
function feeds(dir: string, shape: LayaShapeName): Record<string, ort.Tensor> {
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, number>;
  const next = seededRandom(1);
  const word = (): number => 256 + Math.floor(next() * (LAYA_SHAPES[shape].tokenizerBpe - 256));
  const ids = [config.cls_token_id!, ...Array.from({ length: 20 }, word), config.sep_token_id!];
  const positions: number[] = [];
  for (let k = 0; k < MARKERS; k++) {
    positions.push(ids.length);
    ids.push(config.mask_token_id!, ...Array.from({ length: 5 }, word));
  }
  ids.push(config.sep_token_id!);
  while (ids.length < TOKENS - 1) ids.push(word());
  ids.push(config.sep_token_id!);
  return {
    input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, TOKENS]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(TOKENS).fill(1n), [1, TOKENS]),
    marker_pos: new ort.Tensor('int64', BigInt64Array.from(positions, BigInt), [1, MARKERS]),
    marker_mask: new ort.Tensor('bool', new Uint8Array(MARKERS).fill(1), [1, MARKERS]),
    qtype: new ort.Tensor('int64', BigInt64Array.of(0n), [1]),
  };
}

const mib = (bytes: number): number => Math.round(bytes / 2 ** 20);

/** The process's peak RSS (Linux VmHWM), in MiB. */
function peakRss(): number {
  const m = /^VmHWM:\s*(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

async function one(dir: string, shape: LayaShapeName, flavor: string, threads: number): Promise<void> {
  const before = process.memoryUsage().rss;
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(join(dir, 'onnx', FILES[flavor]!), {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    logSeverityLevel: 3,
    extra: flavor === 'int8' ? await int8SessionConfig() : {},
  });
  const load = performance.now() - t0;
  const afterLoad = process.memoryUsage().rss;
  const input = feeds(dir, shape);
  const times: number[] = [];
  let logits: number[] = [];
  for (let i = 0; i < 6; i++) {
    const t = performance.now();
    const out = await session.run(input);
    if (i > 0) times.push(performance.now() - t);
    logits = Array.from(out.logits!.data as Float32Array);
  }
  times.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      shape,
      flavor,
      threads,
      load_s: +(load / 1000).toFixed(2),
      run_p50_ms: Math.round(times[Math.floor(times.length / 2)]!),
      run_ms: times.map(Math.round),
      rss_mib: {
        before: mib(before),
        after_load: mib(afterLoad),
        after_runs: mib(process.memoryUsage().rss),
        peak: peakRss(),
      },
      finite: logits.every(Number.isFinite),
      logits: logits.slice(0, 3).map((x) => +x.toFixed(3)),
    }),
  );
}

const args = process.argv.slice(2);
const threadsAt = args.indexOf('--threads');
const threads = threadsAt >= 0 ? Number(args.splice(threadsAt, 2)[1]) : 2;
if (args[0] === '--one') {
  await one(args[1]!, args[2] as LayaShapeName, args[3]!, threads);
} else {
  const shape = (args[0] ?? 'modernbert-large') as LayaShapeName;
  const flavors = (args[1] ?? 'fp32,int8,int8-default').split(',');
  if (!(shape in LAYA_SHAPES) || flavors.some((f) => !(f in FILES))) {
    console.error(`usage: npx tsx tools/families/laya/shape-check.ts [SHAPE [${Object.keys(FILES).join(',')}]]`);
    process.exit(2);
  }
  const needed = [...new Set(flavors.map((f) => (f.startsWith('int8') ? 'int8' : f)))] as LayaFlavor[];
  const t0 = performance.now();
  const dir = ensureLayaReplicaShape(shape, needed, { log: (l) => console.log(l) });
  console.log(`${dir} ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  for (const flavor of flavors) {
    const run = spawnSync(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), '--one', dir, shape, flavor, '--threads', String(threads)],
      { stdio: 'inherit' },
    );
    if (run.status !== 0) process.exit(run.status ?? 1);
  }
}
