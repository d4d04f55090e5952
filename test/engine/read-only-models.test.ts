// Operators mount model volumes read-only (our own deploy/deployment.yaml does). An export whose
// weights are in an external file still loads with the graph rewrite there: the small rewritten
// graph goes to the graph cache and reads the weights from the export's folder. The folder is a
// read-only tmpfs mount, which root cannot write either (a chmod or a folder the code is told is
// read-only would prove nothing when tests run as root).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeModel, encodeModel } from '../../src/engine/model/graph-rewrite.js';
import { externalize } from '../../src/engine/model/graph-file.js';
import { loadEvaluator, type EngineNote, type EvaluateResult } from '../../src/engine/index.js';
import { choice, maxDiff, noul, request, score, tinyFp32 } from './fixtures.js';

const QUESTIONS = { n: noul, c: choice, s: score };

/** An Optimum-style export: onnx/model.onnx with its weights in onnx/model.onnx_data. */
async function externalWeightsExport(dir: string): Promise<void> {
  const source = await tinyFp32();
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(source, f), join(dir, f));
  const model = decodeModel(readFileSync(join(source, 'onnx', 'model.onnx')));
  await externalize(model, join(dir, 'onnx', 'model.onnx_data'), 'model.onnx_data');
  writeFileSync(join(dir, 'onnx', 'model.onnx'), encodeModel(model));
}

function mount(...args: string[]): boolean {
  try {
    execFileSync('mount', args, { stdio: 'pipe' });
    return true;
  } catch (error) {
    process.stderr.write(`read-only-models: mount ${args.join(' ')} failed: ${(error as Error).message}\n`);
    return false;
  }
}

const ro = mkdtempSync(join(tmpdir(), 'assay-ro-models-'));
let mounted = false;

beforeAll(async () => {
  mounted = mount('-t', 'tmpfs', '-o', 'size=128m', 'tmpfs', ro);
  if (!mounted) return;
  await externalWeightsExport(ro);
  mounted = mount('-o', 'remount,ro', ro);
});

afterAll(() => {
  if (mounted && mount('-o', 'remount,rw', ro)) execFileSync('umount', [ro]);
});

describe('a read-only model folder', () => {
  it('loads an external-weights export with the rewrite in the graph cache, answering as the writable copy does', async (ctx) => {
    if (!mounted) {
      process.stderr.write(
        '\n*** read-only-models: SKIPPED: this sandbox cannot mount a tmpfs (needs root with CAP_SYS_ADMIN) ***\n\n',
      );
      ctx.skip();
    }
    // The mount really refuses writes, root's too.
    expect(() => writeFileSync(join(ro, 'onnx', 'probe'), 'x')).toThrow(/EROFS/);
    const before = readdirSync(ro, { recursive: true }).sort();

    const writable = mkdtempSync(join(tmpdir(), 'assay-rw-models-'));
    await externalWeightsExport(writable);
    const results: EvaluateResult[] = [];
    const graphs: string[] = [];
    for (const dir of [ro, writable]) {
      const cache = mkdtempSync(join(tmpdir(), 'assay-graph-cache-'));
      const warnings: EngineNote[] = [];
      const evaluator = await loadEvaluator({
        modelDir: dir,
        threads: 1,
        graphCacheDir: cache,
        onNote: (m) => warnings.push(m),
      });
      try {
        // Nothing fell back; the only note is the attention rewrite's (applied from a read-only folder too).
        expect(warnings).toEqual([{ kind: 'attention', message: 'fused into GroupQueryAttention in 2 layers' }]);
        graphs.push(evaluator.graph!);
        // The rewrite ran and lives in the cache: only the graph, the weights stay in the export.
        expect(dirname(dirname(evaluator.graph!))).toBe(cache);
        expect(readdirSync(dirname(evaluator.graph!)).sort()).toEqual(
          [`${evaluator.graph!.split('/').pop()}`, `${evaluator.graph!.split('/').pop()}.json`].sort(),
        );
        expect(JSON.parse(readFileSync(`${evaluator.graph}.json`, 'utf8')).externalDataDir).toBe(join(dir, 'onnx'));
        results.push(await evaluator.evaluate(request(QUESTIONS)));
      } finally {
        await evaluator.close();
      }
    }
    expect(graphs[0]).toMatch(/model\.assay-[0-9a-f]{12}\.onnx$/);
    expect(maxDiff(results[0]!, results[1]!)).toBe(0);
    expect(readdirSync(ro, { recursive: true }).sort()).toEqual(before);
  });
});
