// Peak resident memory while loading a single-file int8 model of the qwen2.5-0.5b shape (how
// quantized exports ship: no external data), in a fresh process per measurement.
//
//   npx tsx bench/engine/load-memory.ts [--repo DIR]   (DIR: another checkout to measure, e.g. an older commit)
//
// Prints the file size, the process's peak RSS (maxRSS) after loadEvaluator, and the time to load,
// for a first load (nothing cached on disk) and a second one.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  statSync,
  writeFileSync,
  copyFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import onnxProto from 'onnx-proto';
import { ensureSynthModel } from '../../src/internal.js';

const args = process.argv.slice(2);
const repo = resolve((args.includes('--repo') ? args[args.indexOf('--repo') + 1] : undefined) ?? '.');

/** A copy of the external-data int8 export with every weight inline: one .onnx file. */
function singleFile(source: string, out: string): string {
  const target = join(out, 'onnx', 'model_quantized.onnx');
  if (existsSync(target)) return out;
  mkdirSync(join(out, 'onnx'), { recursive: true });
  const model = onnxProto.onnx.ModelProto.decode(readFileSync(join(source, 'onnx', 'model_quantized.onnx')));
  const data = readFileSync(join(source, 'onnx', 'model_quantized.onnx_data'));
  for (const t of model.graph!.initializer!) {
    const ext = Object.fromEntries((t.externalData ?? []).map((e) => [e.key, e.value]));
    if (ext.location === undefined) continue;
    t.rawData = data.subarray(Number(ext.offset ?? 0), Number(ext.offset ?? 0) + Number(ext.length));
    t.externalData = [];
    t.dataLocation = 0;
  }
  writeFileSync(target, onnxProto.onnx.ModelProto.encode(model).finish());
  for (const f of readdirSync(source))
    if (!statSync(join(source, f)).isDirectory() && f !== 'config.json') copyFileSync(join(source, f), join(out, f));
  const config = JSON.parse(readFileSync(join(source, 'config.json'), 'utf8')) as Record<string, unknown>;
  delete config['transformers.js_config'];
  writeFileSync(join(out, 'config.json'), JSON.stringify(config, null, 2));
  return out;
}

function measure(dir: string): { maxRssMiB: number; seconds: number } {
  const script = `
    const t0 = performance.now();
    const { loadEvaluator } = await import(${JSON.stringify(join(repo, 'src/engine/index.ts'))});
    const e = await loadEvaluator({ modelDir: ${JSON.stringify(dir)}, threads: 2, onNote: (m) => console.error("warning: " + m.message) });
    const seconds = (performance.now() - t0) / 1000;
    console.log(JSON.stringify({ maxRssMiB: Math.round(process.resourceUsage().maxRSS / 1024), seconds: Math.round(seconds * 10) / 10 }));
    await e.close();`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: repo,
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: cache },
  });
  return JSON.parse(out.trim().split('\n').pop()!) as { maxRssMiB: number; seconds: number };
}

const source = await ensureSynthModel({
  shape: 'qwen2.5-0.5b',
  dtype: 'int8',
  log: (l) => process.stderr.write(`${l}\n`),
});
const dir = singleFile(source, join(resolve('models/generated'), 'qwen2.5-0.5b-int8-singlefile'));
// Start from an empty graph cache, so the first load pays for the rewrite.
const cache = mkdtempSync(join(tmpdir(), 'assay-load-memory-'));
const size = statSync(join(dir, 'onnx', 'model_quantized.onnx')).size;
const first = measure(dir);
const second = measure(dir);
console.log(
  JSON.stringify({ repo, file: 'onnx/model_quantized.onnx', fileMiB: Math.round(size / 2 ** 20), first, second }),
);
