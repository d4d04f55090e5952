// The loader discovers the I/O contract from the export and rejects what it cannot serve, clearly.
import { mkdtempSync, mkdirSync, copyFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import onnxProto from 'onnx-proto';
import { GraphBuilder, DataType } from '../../src/model-files/onnx/graph-builder.js';
import { loadEvaluator, ModelLoadError } from '../../src/engine/index.js';
import { rewrittenGraph } from '../../src/engine/model/graph-file.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { noul, request, tinyFp32 } from './fixtures.js';

async function loadError(modelDir: string): Promise<Error> {
  const result = await loadEvaluator({ modelDir, threads: 1 }).then(
    async (e) => {
      await e.close();
      return undefined;
    },
    (e: Error) => e,
  );
  if (!result) throw new Error(`${modelDir} loaded`);
  return result;
}

/** A folder with the tiny model's config and tokenizer but the given ONNX file. */
async function folderWith(onnx?: Uint8Array): Promise<string> {
  const source = await tinyFp32();
  const dir = mkdtempSync(join(tmpdir(), 'assay-loader-'));
  for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(source, f), join(dir, f));
  if (onnx) {
    mkdirSync(join(dir, 'onnx'));
    writeFileSync(join(dir, 'onnx', 'model.onnx'), onnx);
  }
  return dir;
}

let tinyFp32Dir: string;

describe('model loader', () => {
  beforeAll(async () => {
    tinyFp32Dir = await tinyFp32();
  });

  it('rejects a folder that does not exist, or has no config.json', async () => {
    expect(await loadError('/nonexistent/model')).toBeInstanceOf(ModelLoadError);
    const empty = mkdtempSync(join(tmpdir(), 'assay-empty-'));
    const e = await loadError(empty);
    expect(e).toBeInstanceOf(ModelLoadError);
    // No family's files: it says what each family needs (families/detect.ts).
    expect(e.message).toMatch(
      /matches no model family: a decoder needs config\.json .* or genai_config\.json; a Laya decision model .* needs rl_agent_config\.json/,
    );
  });

  it('rejects a folder without an ONNX file', async () => {
    const e = await loadError(await folderWith());
    expect(e).toBeInstanceOf(ModelLoadError);
    // It says what it found and what it expected, not a misleading "not a decoder".
    expect(e.message).toMatch(
      /found config\.json, tokenizer\.json, tokenizer_config\.json; expected an ONNX decoder file: model_int8\.onnx, model_quantized\.onnx, model\.onnx/,
    );
  });

  it('rejects an ONNX model that is not a decoder with a KV cache', async () => {
    // An encoder-like graph: input_ids + attention_mask in, logits out, no past_key_values.
    const g = new GraphBuilder('not-a-decoder');
    g.input('input_ids', DataType.INT64, ['batch_size', 'sequence_length']);
    g.input('attention_mask', DataType.INT64, ['batch_size', 'sequence_length']);
    const f = g.op('Cast', ['input_ids'], { to: { i: DataType.FLOAT } });
    g.node('Unsqueeze', [f, g.constI64([2])], { outputs: ['logits'] });
    g.output('logits', DataType.FLOAT, ['batch_size', 'sequence_length', 1]);
    const bytes = onnxProto.onnx.ModelProto.encode(g.toModel({ opset: 17 })).finish();
    const e = await loadError(await folderWith(bytes));
    expect(e).toBeInstanceOf(ModelLoadError);
    expect(e.message).toMatch(/past_key_values/);
  });

  it('rejects a file that is not ONNX at all', async () => {
    const e = await loadError(await folderWith(new TextEncoder().encode('this is not a protobuf')));
    expect(e).toBeInstanceOf(ModelLoadError);
  });

  it('a variant the folder lacks: names the variant, its file and what is there', async () => {
    const dir = await folderWith(readFileSync(join(tinyFp32Dir, 'onnx', 'model.onnx')));
    const e = await loadEvaluator({ modelDir: dir, variant: 'q4f16', threads: 1 }).then(
      (ev) => ev.close().then(() => undefined),
      (err: Error) => err,
    );
    expect(e).toBeInstanceOf(ModelLoadError);
    expect(e!.message).toMatch(
      /found .*onnx\/model\.onnx, config\.json.*; expected variant 'q4f16' as model_q4f16\.onnx under onnx\/ or at the folder root/,
    );
  });

  it('an onnxruntime-genai folder without the model file it names: says so, not "not a decoder"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-genai-'));
    copyFileSync(join(tinyFp32Dir, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    writeFileSync(
      join(dir, 'genai_config.json'),
      JSON.stringify({
        model: {
          type: 'qwen2',
          context_length: 512,
          decoder: {
            filename: 'model.onnx',
            head_size: 16,
            hidden_size: 64,
            num_attention_heads: 4,
            num_key_value_heads: 2,
            num_hidden_layers: 2,
          },
          eos_token_id: [1],
        },
      }),
    );
    const e = await loadError(dir);
    expect(e).toBeInstanceOf(ModelLoadError);
    expect(e.message).toMatch(
      /genai_config\.json names model\.onnx, which is missing \(found genai_config\.json, tokenizer\.json\)/,
    );
  });

  it('loads the exports it should and answers', async () => {
    const evaluator = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1 });
    const { answers } = await evaluator.evaluate(request({ n: noul }));
    expect(answers.n!.type).toBe('noul');
    await evaluator.close();
  });
});

/** A writable copy of the tiny fp32 model folder (its export and what loading it needs). */
async function copyOfTiny(prefix: string): Promise<string> {
  const source = await tinyFp32();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(source, f), join(dir, f));
  mkdirSync(join(dir, 'onnx'));
  copyFileSync(join(source, 'onnx', 'model.onnx'), join(dir, 'onnx', 'model.onnx'));
  return dir;
}

describe('rewritten graphs on disk', () => {
  it('go to the graph cache: nothing in the model folder is written or deleted, and older rewrites of the same export leave the cache', async () => {
    const dir = await copyOfTiny('assay-stale-');
    const cache = mkdtempSync(join(tmpdir(), 'assay-graph-cache-'));
    const source = join(dir, 'onnx', 'model.onnx');
    // What an older Assay left beside the export stays: the server only reads model folders.
    writeFileSync(join(dir, 'onnx', 'model.assay-0123456789ab.onnx'), 'old');
    const listing = () =>
      readdirSync(dir, { recursive: true, withFileTypes: true })
        .map((e) => `${e.parentPath}/${e.name}:${e.isFile() ? statSync(join(e.parentPath, e.name)).mtimeMs : 'dir'}`)
        .sort();
    const before = listing();
    // Older rewrites in the cache: one of this export (removed), one of another export and a stray folder (kept).
    const entry = (id: string, from: string) => {
      mkdirSync(join(cache, id));
      for (const f of [`model.assay-${id}.onnx`, `model.assay-${id}.onnx.data`])
        writeFileSync(join(cache, id, f), 'old');
      writeFileSync(
        join(cache, id, `model.assay-${id}.onnx.json`),
        JSON.stringify({ sharesActivationScales: false, source: from }),
      );
    };
    entry('0123456789ab', source);
    entry('ba9876543210', '/elsewhere/onnx/model.onnx');
    mkdirSync(join(cache, 'notes'));
    const evaluator = await loadEvaluator({ modelDir: dir, threads: 1, graphCacheDir: cache });
    const target = (await rewrittenGraph(await openModelFolder(dir), 151936, { cacheDir: cache }))!;
    expect(evaluator.graph).toBe(target.path);
    await evaluator.close();
    expect(listing()).toEqual(before);
    expect(readdirSync(cache).sort()).toEqual([basename(dirname(target.path)), 'ba9876543210', 'notes'].sort());
    expect(dirname(dirname(target.path))).toBe(cache);
    expect(JSON.parse(readFileSync(`${target.path}.json`, 'utf8'))).toEqual({
      sharesActivationScales: false,
      source,
      fused: true,
      fusedAttention: { layers: 2 },
    });
    // The rewrite without fused attention (a registry entry with "fused_attention": false on the same
    // folder) lives beside it: neither removes the other.
    const unfused = await loadEvaluator({ modelDir: dir, threads: 1, graphCacheDir: cache, fusedAttention: false });
    await unfused.close();
    expect(unfused.graph).not.toBe(target.path);
    expect(readdirSync(cache).sort()).toEqual(
      [basename(dirname(target.path)), basename(dirname(unfused.graph!)), 'ba9876543210', 'notes'].sort(),
    );
  });

  it('a graph cache that cannot be written: the export runs as is, with one warning saying why', async () => {
    const dir = await copyOfTiny('assay-nocache-');
    // A folder under a regular file: mkdir fails for root too (ENOTDIR).
    const file = join(mkdtempSync(join(tmpdir(), 'assay-notdir-')), 'file');
    writeFileSync(file, '');
    const warnings: string[] = [];
    const evaluator = await loadEvaluator({
      modelDir: dir,
      threads: 1,
      graphCacheDir: join(file, 'graphs'),
      onNote: (m) => warnings.push(m.message),
    });
    try {
      expect(evaluator.graph).toBe(join(dir, 'onnx', 'model.onnx'));
      expect((await evaluator.evaluate(request({ n: noul }))).answers.n!.type).toBe('noul');
      expect(warnings).toEqual([
        expect.stringMatching(
          /graph rewrite skipped for .*model\.onnx: no graph cache folder can be written \(.*ENOTDIR.*\); set --graph-cache-dir/,
        ),
      ]);
    } finally {
      await evaluator.close();
    }
  });
});

describe('graph rewrite fallback', () => {
  it('a rewritten graph onnxruntime refuses is replaced by the stock graph, with one warning naming why', async () => {
    const dir = await copyOfTiny('assay-fallback-');
    // Learn where the rewritten graph goes, then corrupt it (a damaged cache, a rewrite a newer
    // onnxruntime op defeats: either way onnxruntime refuses the rewritten file).
    const folder = await openModelFolder(dir);
    const target = (await rewrittenGraph(folder, 151936))!.path;
    writeFileSync(target, 'not a model');
    const warnings: string[] = [];
    const evaluator = await loadEvaluator({ modelDir: dir, threads: 1, onNote: (m) => warnings.push(m.message) });
    try {
      const { answers } = await evaluator.evaluate(request({ n: noul }));
      expect(answers.n!.type).toBe('noul');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/rewritten graph of .*model\.onnx did not load .*running the export as is/);
    } finally {
      await evaluator.close();
    }
    // Turned off, nothing is rewritten or warned about.
    const quiet: string[] = [];
    const off = await loadEvaluator({
      modelDir: dir,
      threads: 1,
      rewriteGraph: false,
      onNote: (m) => quiet.push(m.message),
    });
    await off.close();
    expect(quiet).toEqual([]);
  });
});
