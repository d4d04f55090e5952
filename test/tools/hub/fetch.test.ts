// models:fetch against a local hub (test/tools/hub/hub-server.ts) serving the tiny int8 synthetic
// export: download + registration, checksum failure, resume, a missing repo, and the engine
// serving the fetched folder as it lies on disk; then the encoder families' layouts (Laya, NLI).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../../src/model-files/synth/ensure.js';
import { ensureFlavor } from '../../../tools/flavors.js';
import { externalize } from '../../../src/engine/model/graph-file.js';
import { decodeModel, encodeModel } from '../../../src/engine/model/graph-rewrite.js';
import { run } from '../../../src/commands/models-fetch.js';
import { detectFamily, loadEvaluator } from '../../../src/engine/index.js';
import { fetchModel, HubFetchError } from '../../../src/model-files/hub/fetch.js';
import { loadRegistry, resolveModel } from '../../../src/registry/index.js';
import { ensureLayaReplica } from '../../../tools/families/laya/replica.js';
import { ensureNliReplica } from '../../../tools/families/nli/replica.js';
import { FakeHub } from './hub-server.js';

const REPO = 'acme/tiny-int8';
const ONNX = 'onnx/model_quantized.onnx';
const TOKEN = 'hf_localtesttoken';
/** What a fetch of the int8 variant brings: the export's files, never the synthetic marker assay.json. */
const EXPECTED = ['config.json', 'generation_config.json', ONNX, 'tokenizer.json', 'tokenizer_config.json'];

let hub: FakeHub;
let source: string;
let commit: string;
let tmp: string;
let dest: string;
let registry: string;

beforeAll(async () => {
  source = await ensureSynthModel({ shape: 'tiny', dtype: 'int8' });
  hub = new FakeHub();
  commit = hub.addRepo(REPO, source);
  await hub.start();
});
afterAll(async () => {
  await hub.stop();
});
beforeEach(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'assay-fetch-'));
  dest = path.join(tmp, 'hub');
  registry = path.join(tmp, 'registry.json');
  hub.log.length = 0;
  hub.corrupt.clear();
  hub.truncateAt.clear();
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

function sink(): Writable & { text: () => string } {
  const chunks: string[] = [];
  const w = new Writable({
    write(c, _e, cb) {
      chunks.push(String(c));
      cb();
    },
  });
  return Object.assign(w, { text: () => chunks.join('') });
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = sink();
  const err = sink();
  const code = await run([...args, '--dest', dest, '--registry', registry], {
    env: { HF_ENDPOINT: hub.url, HF_TOKEN: TOKEN },
    stdout: out,
    stderr: err,
  });
  return { code, out: out.text(), err: err.text() };
}

const modelDir = () => path.join(dest, 'acme', 'tiny-int8', commit);
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function filesUnder(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

describe('models:fetch', () => {
  it('downloads and verifies the export, registers it, and the engine serves the folder unchanged', async () => {
    const r = await cli([REPO, '--variant', 'int8', '--id', 'svc-9.9.0', '--alias', 'svc-next']);
    expect(r.err).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.err).toContain('100.0%');

    // Byte-identical copies of exactly the export's files, under <repo>/<commit>/.
    expect(await filesUnder(modelDir())).toEqual(EXPECTED);
    for (const f of EXPECTED) {
      expect(sha256(readFileSync(path.join(modelDir(), f))), f).toBe(sha256(readFileSync(path.join(source, f))));
    }
    // Every hub call went to HF_ENDPOINT with HF_TOKEN; the revision was pinned to the commit.
    expect(hub.log.length).toBeGreaterThan(EXPECTED.length);
    for (const req of hub.log) expect(req.authorization, req.url).toBe(`Bearer ${TOKEN}`);
    expect(hub.log.filter((q) => q.url.includes('/resolve/')).every((q) => q.url.includes(`/resolve/${commit}/`))).toBe(
      true,
    );

    const reg = loadRegistry(registry);
    expect(reg.models['svc-9.9.0']).toEqual({
      path: `hub/acme/tiny-int8/${commit}`,
      variant: 'int8',
      description: expect.stringContaining(REPO),
      release_date: '2025-01-15',
    });
    expect(reg.aliases['svc-next']).toBe('svc-9.9.0');
    expect(JSON.parse(r.out)).toMatchObject({ id: 'svc-9.9.0', commit, variant: 'int8' });

    const resolved = resolveModel(reg, 'svc-next')!;
    expect(resolved.dir).toBe(modelDir());
    const evaluator = await loadEvaluator({ modelDir: resolved.dir, variant: resolved.entry.variant });
    try {
      const res = await evaluator.evaluate({
        state: 'The invoice was paid on 3 March, two weeks late.',
        questions: {
          late: { type: 'noul', instructions: 'Was the invoice paid late?' },
          how: {
            type: 'choice',
            instructions: 'How was it paid?',
            criteria: { card: null, transfer: 'bank transfer', cash: null },
          },
        },
      });
      expect(res.answers.late!.type).toBe('noul');
      const noul = res.answers.late as { noul: number };
      expect(noul.noul).toBeGreaterThanOrEqual(0);
      expect(noul.noul).toBeLessThanOrEqual(1);
      const choice = res.answers.how as { choice: string; probabilities: Record<string, number> };
      expect(Object.keys(choice.probabilities).sort()).toEqual(['card', 'cash', 'transfer']);
      expect(res.usage.input_tokens).toBeGreaterThan(0);
    } finally {
      await evaluator.close();
    }
  });

  it('a second run finds the verified files in place and transfers nothing', async () => {
    // An existing registry keeps its default unless --default says otherwise.
    await writeFile(
      registry,
      JSON.stringify({
        default: 'old',
        models: { old: { path: 'x', description: 'd', release_date: '2024-01-01' } },
        aliases: {},
      }),
    );
    expect((await cli([REPO])).code).toBe(0);
    expect(loadRegistry(registry).default).toBe('old');
    hub.log.length = 0;
    const again = await cli([REPO]);
    expect(again.code).toBe(0);
    expect(hub.log.filter((q) => q.url.includes('/resolve/'))).toEqual([]);
    // Default id: <name>-<variant>-<commit7>
    const id = `tiny-int8-int8-${commit.slice(0, 7)}`;
    expect(Object.keys(loadRegistry(registry).models)).toEqual(['old', id]);
    expect((await cli([REPO, '--default'])).code).toBe(0);
    expect(loadRegistry(registry).default).toBe(id);
  });

  it("without --registry, writes the registry ASSAY_REGISTRY names (as serve reads it), not the package's own", async () => {
    const elsewhere = path.join(tmp, 'env-registry.json');
    const err = sink();
    const code = await run([REPO, '--dest', dest, '--id', 'svc-env'], {
      env: { HF_ENDPOINT: hub.url, HF_TOKEN: TOKEN, ASSAY_REGISTRY: elsewhere },
      stdout: sink(),
      stderr: err,
    });
    expect(code, err.text()).toBe(0);
    expect(Object.keys(loadRegistry(elsewhere).models)).toEqual(['svc-env']);
    expect(err.text()).toContain(`in ${elsewhere}`);
  });

  it('rejects bytes that do not match the hub checksum: clear error, nothing kept, nothing registered', async () => {
    const before = {
      default: 'x',
      models: { x: { path: 'elsewhere', description: 'kept as is', release_date: '2024-01-01' } },
      aliases: {},
    };
    await writeFile(registry, JSON.stringify(before));
    const registryBytes = readFileSync(registry);
    hub.corrupt.add(ONNX);

    const r = await cli([REPO, '--id', 'svc-bad']);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`${ONNX} failed verification`);
    expect(r.err).toContain(`sha256 ${sha256(readFileSync(path.join(source, ONNX)))}`);
    const left = await filesUnder(modelDir());
    expect(left).not.toContain(ONNX);
    expect(left.filter((f) => f.endsWith('.part'))).toEqual([]);
    expect(readFileSync(registry).equals(registryBytes)).toBe(true);
  });

  it('resumes a partial download with a Range request for the rest only', async () => {
    const full = readFileSync(path.join(source, ONNX));
    const have = Math.floor(full.length * 0.4);
    await mkdir(path.join(modelDir(), 'onnx'), { recursive: true });
    await writeFile(path.join(modelDir(), `${ONNX}.part`), full.subarray(0, have));

    const result = await fetchModel({ repo: REPO, destRoot: dest, hubUrl: hub.url, variant: 'int8' });
    expect(result.files.find((f) => f.path === ONNX)!.how).toBe('resumed');
    const requests = hub.downloads(ONNX);
    expect(requests.map((q) => q.range)).toEqual([`bytes=${have}-`]);
    expect(sha256(readFileSync(path.join(modelDir(), ONNX)))).toBe(sha256(full));
    expect(existsSync(path.join(modelDir(), `${ONNX}.part`))).toBe(false);
  });

  it('picks up after a connection dropped mid-file', async () => {
    const full = readFileSync(path.join(source, ONNX));
    hub.truncateAt.set(ONNX, Math.floor(full.length / 2));
    const cut = await fetchModel({ repo: REPO, destRoot: dest, hubUrl: hub.url }).catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(HubFetchError);
    expect((cut as HubFetchError).code).toBe('network');
    expect((cut as Error).message).toMatch(
      /^the transfer of onnx\/model_quantized\.onnx stopped at .* run the same command again to resume/,
    );
    const part = path.join(modelDir(), `${ONNX}.part`);
    const kept = (await stat(part)).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(full.length);

    hub.truncateAt.clear();
    hub.log.length = 0;
    const result = await fetchModel({ repo: REPO, destRoot: dest, hubUrl: hub.url });
    expect(hub.downloads(ONNX).map((q) => q.range)).toEqual([`bytes=${kept}-`]);
    expect(result.files.find((f) => f.path === ONNX)!.how).toBe('resumed');
    expect(sha256(readFileSync(path.join(modelDir(), ONNX)))).toBe(sha256(full));
  });

  it('verifies the resumed bytes too: a corrupt partial file fails and is discarded', async () => {
    const full = readFileSync(path.join(source, ONNX));
    const bad = Buffer.from(full.subarray(0, 1000));
    bad[10]! ^= 0xff;
    await mkdir(path.join(modelDir(), 'onnx'), { recursive: true });
    await writeFile(path.join(modelDir(), `${ONNX}.part`), bad);

    const err = await fetchModel({ repo: REPO, destRoot: dest, hubUrl: hub.url }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HubFetchError);
    expect((err as HubFetchError).code).toBe('checksum');
    expect(existsSync(path.join(modelDir(), `${ONNX}.part`))).toBe(false);
    // The next run starts that file over and succeeds.
    await fetchModel({ repo: REPO, destRoot: dest, hubUrl: hub.url });
    expect(sha256(readFileSync(path.join(modelDir(), ONNX)))).toBe(sha256(full));
  });

  it('a repo the hub does not have: a clear error naming it, nothing written', async () => {
    const r = await cli(['acme/no-such-model']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /model repository acme\/no-such-model@main on http:\/\/127\.0\.0\.1:\d+ was not found \(HTTP 404\)/,
    );
    expect(r.err).toContain('HF_TOKEN');
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(registry)).toBe(false);
  });

  it('a hub that cannot be reached: a clear error, not a stack trace', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
    const io = { out: sink(), err: sink() };
    const code = await run([REPO, '--dest', dest, '--registry', registry], {
      env: { HF_ENDPOINT: endpoint },
      stdout: io.out,
      stderr: io.err,
    });
    expect(code).toBe(1);
    expect(io.err.text()).toContain(`assay models fetch: cannot reach ${endpoint} (ECONNREFUSED)`);
    expect(existsSync(registry)).toBe(false);
  });

  it('a variant the repo lacks: names the variants it has', async () => {
    const r = await cli([REPO, '--variant', 'fp16']);
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      'lacks the fp16 ONNX file. No model_fp16.onnx under onnx/ or at the root. Variants this repo has: int8, quantized.',
    );
    expect(existsSync(registry)).toBe(false);
  });

  it('usage errors exit 2 with the usage text; --help exits 0', async () => {
    expect((await cli([])).code).toBe(2);
    const bad = await cli([REPO, '--variant', 'int4']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain(
      '--variant must be one of fp32, fp16, int8, uint8, quantized, q4, q4f16, bnb4 (q8 = quantized)',
    );
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('Usage: assay models fetch');
  });

  it('--variant q4f16 brings that file, its external data and chat_template.jinja, nothing of other variants; the engine answers', async () => {
    const jinja = await ensureFlavor({ dtype: 'fp32', template: 'jinja' });
    const q4f16 = await ensureFlavor({ dtype: 'q4f16' });
    const src = path.join(tmp, 'src-q4f16');
    await mkdir(path.join(src, 'onnx'), { recursive: true });
    for (const f of [
      'config.json',
      'generation_config.json',
      'tokenizer.json',
      'tokenizer_config.json',
      'chat_template.jinja',
      'onnx/model.onnx',
    ]) {
      await writeFile(path.join(src, f), readFileSync(path.join(jinja, f)));
    }
    // As large exports ship: the graph in model_q4f16.onnx, its weights in model_q4f16.onnx_data.
    const model = decodeModel(readFileSync(path.join(q4f16, 'onnx', 'model_q4f16.onnx')));
    await externalize(model, path.join(src, 'onnx', 'model_q4f16.onnx_data'), 'model_q4f16.onnx_data');
    await writeFile(path.join(src, 'onnx', 'model_q4f16.onnx'), encodeModel(model));
    const repoCommit = hub.addRepo('acme/q4f16-tiny', src);

    const r = await cli(['acme/q4f16-tiny', '--variant', 'q4f16', '--id', 'q']);
    expect(r.code, r.err).toBe(0);
    const dir = path.join(dest, 'acme', 'q4f16-tiny', repoCommit);
    expect(await filesUnder(dir)).toEqual([
      'chat_template.jinja',
      'config.json',
      'generation_config.json',
      'onnx/model_q4f16.onnx',
      'onnx/model_q4f16.onnx_data',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const m = resolveModel(loadRegistry(registry), 'q')!;
    expect(m.entry.variant).toBe('q4f16');
    const evaluator = await loadEvaluator({ modelDir: m.dir, variant: m.entry.variant, threads: 1 });
    try {
      const a = (
        await evaluator.evaluate({
          state: 'The parcel arrived late.',
          questions: { late: { type: 'noul', instructions: 'Was it late?' } },
        })
      ).answers.late!;
      expect(a.type).toBe('noul');
    } finally {
      await evaluator.close();
    }
  });

  it('fetches an Optimum export (model.onnx at the root) and an onnxruntime-genai build, and the engine loads both', async () => {
    const fp32 = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const copy = async (dir: string, files: Record<string, string>) => {
      await mkdir(dir, { recursive: true });
      for (const [to, from] of Object.entries(files))
        await writeFile(path.join(dir, to), readFileSync(path.join(fp32, from)));
    };
    const optimum = path.join(tmp, 'src-optimum');
    await copy(optimum, {
      'config.json': 'config.json',
      'tokenizer.json': 'tokenizer.json',
      'tokenizer_config.json': 'tokenizer_config.json',
      'model.onnx': 'onnx/model.onnx',
    });
    // A genai build keeps one of its builds per folder, with genai_config.json and no config.json.
    const genai = path.join(tmp, 'src-genai', 'cpu-fp32');
    await copy(genai, {
      'tokenizer.json': 'tokenizer.json',
      'tokenizer_config.json': 'tokenizer_config.json',
      'model.onnx': 'onnx/model.onnx',
    });
    const c = JSON.parse(readFileSync(path.join(fp32, 'config.json'), 'utf8')) as Record<string, number>;
    await writeFile(
      path.join(genai, 'genai_config.json'),
      JSON.stringify({
        model: {
          type: 'qwen2',
          context_length: c.max_position_embeddings,
          eos_token_id: [151645, 151643],
          vocab_size: c.vocab_size,
          decoder: {
            filename: 'model.onnx',
            head_size: c.head_dim,
            hidden_size: c.hidden_size,
            num_attention_heads: c.num_attention_heads,
            num_key_value_heads: c.num_key_value_heads,
            num_hidden_layers: c.num_hidden_layers,
            inputs: {
              input_ids: 'input_ids',
              attention_mask: 'attention_mask',
              past_key_names: 'past_key_values.%d.key',
              past_value_names: 'past_key_values.%d.value',
            },
            outputs: { logits: 'logits', present_key_names: 'present.%d.key', present_value_names: 'present.%d.value' },
          },
        },
      }),
    );
    const optimumCommit = hub.addRepo('acme/optimum-tiny', optimum);
    const genaiCommit = hub.addRepo('acme/genai-tiny', path.join(tmp, 'src-genai'));

    const o = await cli(['acme/optimum-tiny', '--variant', 'fp32', '--id', 'opt']);
    expect(o.code, o.err).toBe(0);
    expect(await filesUnder(path.join(dest, 'acme', 'optimum-tiny', optimumCommit))).toEqual([
      'config.json',
      'model.onnx',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(JSON.parse(o.out)).toMatchObject({ variant: 'fp32', layout: 'optimum' });

    expect((await cli(['acme/genai-tiny', '--subfolder', 'cpu-fp32', '--variant', 'fp32'])).err).toContain(
      'omit --variant',
    );
    const g = await cli(['acme/genai-tiny', '--subfolder', 'cpu-fp32', '--id', 'gen']);
    expect(g.code, g.err).toBe(0);
    const genaiDir = path.join(dest, 'acme', 'genai-tiny', genaiCommit, 'cpu-fp32');
    expect(await filesUnder(genaiDir)).toEqual([
      'genai_config.json',
      'model.onnx',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(loadRegistry(registry).models.gen!.variant).toBeUndefined();

    const question = {
      state: 'The parcel arrived late.',
      questions: { late: { type: 'noul' as const, instructions: 'Was it late?' } },
    };
    const answers: number[] = [];
    for (const id of ['opt', 'gen']) {
      const m = resolveModel(loadRegistry(registry), id)!;
      const evaluator = await loadEvaluator({ modelDir: m.dir, variant: m.entry.variant, threads: 1 });
      try {
        const a = (await evaluator.evaluate(question)).answers.late!;
        answers.push(a.type === 'noul' ? a.noul : NaN);
      } finally {
        await evaluator.close();
      }
    }
    // The same weights behind both layouts give the same answer.
    expect(Math.abs(answers[0]! - answers[1]!)).toBeLessThan(1e-6);
  });
});

// The encoder families: the repo's files say the family (the engine's rules), and the fetch brings
// what that family's loader reads. The Laya repo is the synthetic replica as the public exports lay
// it out (tokenizer/, onnx/model.onnx + model.onnx_data, model_fp16.onnx, the split encoder + head,
// plus weights.safetensors, which no loader reads); the others are small dummy files in the other
// published layouts (the fetch checks file selection, checksums and resume, not model numerics).
describe('models:fetch, encoder families', () => {
  const LAYA = 'acme/laya-replica';
  const LAYA_ROOT = 'acme/laya-root';
  const LAYA_SPLIT = 'acme/laya-split-only';
  const NLI = 'acme/nli-tiny';
  const NLI_OPTIMUM = 'acme/nli-optimum';
  const commits = new Map<string, string>();
  let sources: string;
  let replica: string;
  const LAYA_COMMON = [
    'assay.json',
    'config.json',
    'rl_agent_config.json',
    'tokenizer/special_tokens_map.json',
    'tokenizer/tokenizer.json',
    'tokenizer/tokenizer_config.json',
  ];
  const NLI_CONFIG_JSON = JSON.stringify({
    architectures: ['DebertaV2ForSequenceClassification'],
    id2label: { 0: 'entailment', 1: 'neutral', 2: 'contradiction' },
    label2id: { entailment: 0, neutral: 1, contradiction: 2 },
  });
  const NLI_TOKENIZER = ['added_tokens.json', 'special_tokens_map.json', 'spm.model', 'tokenizer.json'];

  const folder = (repo: string) => path.join(dest, ...repo.split('/'), commits.get(repo)!);
  const fetchRepo = (repo: string, extra: Partial<Parameters<typeof fetchModel>[0]> = {}) =>
    fetchModel({ repo, destRoot: dest, hubUrl: hub.url, ...extra });
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => expect.fail('expected the fetch to fail'),
      (e: unknown) => e,
    );
  /** The fetched folder loads in the engine and answers a noul question (random weights: any probability). */
  async function answersNoul(modelDir: string, variant: string | undefined): Promise<void> {
    const evaluator = await loadEvaluator({ modelDir, variant, engineThread: false, threads: 1 });
    try {
      const { answers } = await evaluator.evaluate({
        state: 'The invoice was paid on 3 March, two weeks late.',
        questions: { late: { type: 'noul', instructions: 'Was the invoice paid late?' } },
      });
      const late = answers.late as { type: string; noul: number };
      expect(late.type).toBe('noul');
      expect(late.noul).toBeGreaterThanOrEqual(0);
      expect(late.noul).toBeLessThanOrEqual(1);
    } finally {
      await evaluator.close();
    }
  }
  /** A repo of small files, each holding its own path (or the text given). */
  async function dummyRepo(id: string, files: Array<string | [string, string]>): Promise<void> {
    const dir = path.join(sources, id);
    for (const f of files) {
      const [rel, text] = typeof f === 'string' ? [f, `${id}: ${f}`] : f;
      await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
      await writeFile(path.join(dir, rel), text);
    }
    commits.set(id, hub.addRepo(id, dir));
  }

  beforeAll(async () => {
    replica = ensureLayaReplica();
    sources = await mkdtemp(path.join(tmpdir(), 'assay-fetch-families-'));
    const layaDir = path.join(sources, LAYA);
    await mkdir(path.dirname(layaDir), { recursive: true });
    await symlink(replica, layaDir);
    commits.set(LAYA, hub.addRepo(LAYA, layaDir));
    const layaRoot = [
      'rl_agent_config.json',
      'config.json',
      'tokenizer.json',
      'tokenizer_config.json',
      'model.onnx',
      'model.onnx.data',
      'model_quantized.onnx',
      'model_q4.onnx',
      'encoder.onnx',
      'encoder.onnx_data',
      'head.onnx',
      'model.safetensors',
      'README.md',
    ];
    await dummyRepo(LAYA_ROOT, layaRoot);
    await dummyRepo(LAYA_SPLIT, [
      'rl_agent_config.json',
      'tokenizer/tokenizer.json',
      'onnx/encoder.onnx',
      'onnx/head.onnx',
      'onnx/head.onnx_data',
    ]);
    await dummyRepo(NLI, [
      ['config.json', NLI_CONFIG_JSON],
      'tokenizer_config.json',
      ...NLI_TOKENIZER,
      'onnx/model.onnx',
      'onnx/model_quantized.onnx',
      'model.safetensors',
      'README.md',
    ]);
    await dummyRepo(NLI_OPTIMUM, [
      ['config.json', JSON.stringify({ architectures: ['ModernBertModel'] })],
      ['nli_config.json', JSON.stringify({ entailment: 'entailment' })],
      'tokenizer.json',
      'model.onnx',
      'model.onnx_data',
    ]);
  });
  afterAll(async () => {
    await rm(sources, { recursive: true, force: true });
  });

  it('a Laya repo: the fp32 graph with its external data, the config and tokenizer/ where they are; registered without a family field, detected and served', async () => {
    const r = await cli([LAYA, '--variant', 'fp32', '--id', 'laya-1']);
    expect(r.code, r.err).toBe(0);
    const expected = [...LAYA_COMMON, 'onnx/model.onnx', 'onnx/model.onnx_data'].sort();
    expect(await filesUnder(folder(LAYA))).toEqual(expected);
    for (const f of expected)
      expect(sha256(readFileSync(path.join(folder(LAYA), f))), f).toBe(sha256(readFileSync(path.join(replica, f))));
    expect(r.err).toContain('family laya-markers (by its rl_agent_config.json), graph onnx/model.onnx');
    expect(JSON.parse(r.out)).toMatchObject({ id: 'laya-1', family: 'laya-markers', variant: 'fp32', layout: 'hf' });
    const m = resolveModel(loadRegistry(registry), 'laya-1')!;
    expect(m.entry).toEqual({
      path: `hub/acme/laya-replica/${commits.get(LAYA)}`,
      variant: 'fp32',
      description: expect.stringContaining(`${LAYA} (laya-markers, fp32)`),
      release_date: '2025-01-15',
    });
    expect(detectFamily(m.dir)).toBe('laya-markers');

    await answersNoul(m.dir, m.entry.variant);

    // Again: every file (config.json, read to choose, included) is found verified in place.
    hub.log.length = 0;
    const again = await fetchRepo(LAYA, { variant: 'fp32' });
    expect(hub.log.filter((q) => q.url.includes('/resolve/'))).toEqual([]);
    expect(again.files.every((f) => f.how === 'present')).toBe(true);
  });

  it('a Laya repo: the int8 default, --variant fp16 brings that graph alone, --split the encoder and head; a variant it lacks names those it has', async () => {
    // model_int8.onnx before model_quantized.onnx (the same bytes in the replica), as the engine picks.
    const int8 = await fetchRepo(LAYA);
    expect(int8).toMatchObject({ variant: 'int8', graph: ['onnx/model_int8.onnx'], split: false });
    expect(await filesUnder(folder(LAYA))).toEqual([...LAYA_COMMON, 'onnx/model_int8.onnx'].sort());
    await rm(dest, { recursive: true });

    const fp16 = await fetchRepo(LAYA, { variant: 'fp16' });
    expect(fp16).toMatchObject({ family: 'laya-markers', familyFrom: 'rl_agent_config.json', variant: 'fp16' });
    expect(fp16.graph).toEqual(['onnx/model_fp16.onnx']);
    expect(await filesUnder(folder(LAYA))).toEqual([...LAYA_COMMON, 'onnx/model_fp16.onnx'].sort());
    await rm(dest, { recursive: true });

    const split = await fetchRepo(LAYA, { split: true });
    expect(split).toMatchObject({ split: true, variant: undefined, graph: ['onnx/encoder.onnx', 'onnx/head.onnx'] });
    expect(await filesUnder(folder(LAYA))).toEqual([...LAYA_COMMON, 'onnx/encoder.onnx', 'onnx/head.onnx'].sort());
    expect(detectFamily(folder(LAYA))).toBe('laya-markers');
    await rm(dest, { recursive: true });

    const r = await cli([LAYA, '--variant', 'q4']);
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      `${LAYA}@main (laya-markers, by its rl_agent_config.json) lacks the q4 ONNX file. No model_q4.onnx ` +
        'under onnx/ or at the root. Variants this repo has: fp32, fp16, int8, quantized, split (--split).',
    );
    // Nothing was written: the files read to choose are kept in memory until the choice is made.
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(registry)).toBe(false);
    expect(((await failure(fetchRepo(LAYA, { split: true, variant: 'fp32' }))) as Error).message).toContain(
      '--split and --variant each choose the graph',
    );
  });

  it('a Laya repo with everything at the root: the int8 default, fp32 with model.onnx.data, the split with its external data; a repo with only the split gets it by default', async () => {
    const common = ['config.json', 'rl_agent_config.json', 'tokenizer.json', 'tokenizer_config.json'];
    // Its config.json is not JSON: the rules never read it (rl_agent_config.json decides first).
    const int8 = await fetchRepo(LAYA_ROOT);
    expect(int8).toMatchObject({ variant: 'int8', layout: 'optimum', graph: ['model_quantized.onnx'] });
    expect(await filesUnder(folder(LAYA_ROOT))).toEqual([...common, 'model_quantized.onnx'].sort());
    await rm(dest, { recursive: true });
    await fetchRepo(LAYA_ROOT, { variant: 'fp32' });
    expect(await filesUnder(folder(LAYA_ROOT))).toEqual([...common, 'model.onnx', 'model.onnx.data'].sort());
    await rm(dest, { recursive: true });
    await fetchRepo(LAYA_ROOT, { split: true });
    expect(await filesUnder(folder(LAYA_ROOT))).toEqual(
      [...common, 'encoder.onnx', 'encoder.onnx_data', 'head.onnx'].sort(),
    );
    expect(detectFamily(folder(LAYA_ROOT))).toBe('laya-markers');

    const split = await fetchRepo(LAYA_SPLIT);
    expect(split).toMatchObject({ split: true, graph: ['onnx/encoder.onnx', 'onnx/head.onnx'] });
    expect(await filesUnder(folder(LAYA_SPLIT))).toEqual([
      'onnx/encoder.onnx',
      'onnx/head.onnx',
      'onnx/head.onnx_data',
      'rl_agent_config.json',
      'tokenizer/tokenizer.json',
    ]);
    expect(detectFamily(folder(LAYA_SPLIT))).toBe('laya-markers');
    const none = await failure(fetchRepo(LAYA_SPLIT, { variant: 'fp32' }));
    expect((none as HubFetchError).code).toBe('missing_file');
    expect((none as Error).message).toContain('Variants this repo has: split (--split).');
  });

  it('an NLI repo (by its ForSequenceClassification config.json): the int8 default or the variant asked for, config.json and every tokenizer file', async () => {
    const r = await cli([NLI, '--id', 'nli-1']);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain('family nli-pairs (by its config.json), graph onnx/model_quantized.onnx');
    // config.json, read to choose, was written from those bytes: one transfer.
    expect(hub.downloads('config.json')).toHaveLength(1);
    const common = ['config.json', 'tokenizer_config.json', ...NLI_TOKENIZER];
    expect(await filesUnder(folder(NLI))).toEqual([...common, 'onnx/model_quantized.onnx'].sort());
    for (const f of common)
      expect(sha256(readFileSync(path.join(folder(NLI), f))), f).toBe(sha256(readFileSync(path.join(sources, NLI, f))));
    const m = resolveModel(loadRegistry(registry), 'nli-1')!;
    expect(m.entry).not.toHaveProperty('family');
    expect(m.entry).toMatchObject({ variant: 'int8', description: expect.stringContaining('(nli-pairs, int8)') });
    expect(detectFamily(m.dir)).toBe('nli-pairs');
    await rm(dest, { recursive: true });

    const fp32 = await fetchRepo(NLI, { variant: 'fp32' });
    expect(fp32).toMatchObject({ family: 'nli-pairs', variant: 'fp32', graph: ['onnx/model.onnx'] });
    expect(await filesUnder(folder(NLI))).toEqual([...common, 'onnx/model.onnx'].sort());

    const q4 = await cli([NLI, '--variant', 'q4']);
    expect(q4.code).toBe(1);
    expect(q4.err).toContain(
      `${NLI}@main (nli-pairs, by its config.json) lacks the q4 ONNX file. No model_q4.onnx under onnx/ or at the root. ` +
        'Variants this repo has: fp32, int8, quantized.',
    );
    const split = await cli([NLI, '--split']);
    expect(split.code).toBe(1);
    expect(split.err).toContain('an NLI cross-encoder is one graph');
  });

  it('the NLI replicas as published (DeBERTa-v3 in the transformers.js layout, ModernBERT in the Optimum layout): fetched, detected, and the int8 DeBERTa answers', async () => {
    const deberta = ensureNliReplica('deberta');
    const modernbert = ensureNliReplica('modernbert');
    for (const [id, dir] of [
      ['acme/nli-deberta', deberta],
      ['acme/nli-modernbert', modernbert],
    ] as const) {
      const link = path.join(sources, id);
      await mkdir(path.dirname(link), { recursive: true });
      await symlink(dir, link);
      commits.set(id, hub.addRepo(id, link));
    }
    const common = ['assay.json', 'config.json', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json'];
    const r = await cli(['acme/nli-deberta', '--id', 'nli-deberta']);
    expect(r.code, r.err).toBe(0);
    expect(await filesUnder(folder('acme/nli-deberta'))).toEqual([...common, 'onnx/model_quantized.onnx'].sort());
    const m = resolveModel(loadRegistry(registry), 'nli-deberta')!;
    expect(m.entry.variant).toBe('int8');
    expect(detectFamily(m.dir)).toBe('nli-pairs');
    await answersNoul(m.dir, m.entry.variant);

    const fp32 = await fetchRepo('acme/nli-deberta', { variant: 'fp32' });
    expect(fp32.graph).toEqual(['onnx/model.onnx']);
    expect(fp32.files.map((f) => f.path)).toContain('onnx/model.onnx_data');
    const optimum = await fetchRepo('acme/nli-modernbert');
    expect(optimum).toMatchObject({
      family: 'nli-pairs',
      familyFrom: 'config.json',
      variant: 'fp32',
      layout: 'optimum',
    });
    expect(await filesUnder(folder('acme/nli-modernbert'))).toEqual([...common, 'model.onnx'].sort());
    expect(detectFamily(folder('acme/nli-modernbert'))).toBe('nli-pairs');
  });

  it('an NLI repo by its nli_config.json in the Optimum layout: model.onnx and its data at the root', async () => {
    const r = await fetchRepo(NLI_OPTIMUM);
    expect(r).toMatchObject({ family: 'nli-pairs', familyFrom: 'nli_config.json', variant: 'fp32', layout: 'optimum' });
    expect(await filesUnder(folder(NLI_OPTIMUM))).toEqual([
      'config.json',
      'model.onnx',
      'model.onnx_data',
      'nli_config.json',
      'tokenizer.json',
    ]);
    expect(detectFamily(folder(NLI_OPTIMUM))).toBe('nli-pairs');
  });

  it('decision.json declares the family: fetched with the rest; a declared family whose files are missing, or an unknown layout, is an error before anything is written', async () => {
    await dummyRepo('acme/nli-declared', [
      ['decision.json', JSON.stringify({ layout: 'nli-pairs-v1' })],
      ['config.json', NLI_CONFIG_JSON],
      'tokenizer/tokenizer.json',
      'onnx/model.onnx',
    ]);
    const declared = await fetchRepo('acme/nli-declared');
    expect(declared).toMatchObject({ family: 'nli-pairs', familyFrom: 'decision.json' });
    expect(await filesUnder(folder('acme/nli-declared'))).toEqual([
      'config.json',
      'decision.json',
      'onnx/model.onnx',
      'tokenizer/tokenizer.json',
    ]);

    await dummyRepo('acme/laya-declared', [
      ['decision.json', JSON.stringify({ layout: 'laya-markers-v1' })],
      'tokenizer.json',
      'onnx/model.onnx',
    ]);
    const lacks = await failure(fetchRepo('acme/laya-declared'));
    expect((lacks as HubFetchError).code).toBe('missing_file');
    expect((lacks as Error).message).toBe(
      'acme/laya-declared@main (laya-markers, by its decision.json) lacks rl_agent_config.json.',
    );
    await dummyRepo('acme/gliclass', [['decision.json', JSON.stringify({ layout: 'gliclass-v1' })], 'model.onnx']);
    const unknown = await failure(fetchRepo('acme/gliclass'));
    expect((unknown as HubFetchError).code).toBe('layout');
    expect((unknown as Error).message).toContain("unknown model family 'gliclass-v1'");
    expect(existsSync(folder('acme/laya-declared'))).toBe(false);
    expect(existsSync(folder('acme/gliclass'))).toBe(false);

    await dummyRepo('acme/kev', [
      ['decision.json', JSON.stringify({ layout: 'kev-pointer-v1' })],
      ['calibration.json', JSON.stringify({ temperature: 2.4 })],
      'tokenizer.json',
      'model.onnx',
      'model.onnx_data',
      'README.md',
    ]);
    const kev = await fetchRepo('acme/kev');
    expect(kev).toMatchObject({ family: 'kev-pointer', familyFrom: 'decision.json' });
    expect(await filesUnder(folder('acme/kev'))).toEqual([
      'calibration.json',
      'decision.json',
      'model.onnx',
      'model.onnx_data',
      'tokenizer.json',
    ]);
  });

  it('checks and resumes the family files too: a corrupt config.json fails before anything is written, a partial external-data file resumes', async () => {
    hub.corrupt.add('config.json');
    const bad = await failure(fetchRepo(NLI));
    expect((bad as HubFetchError).code).toBe('checksum');
    expect((bad as Error).message).toContain('config.json failed verification');
    expect(existsSync(dest)).toBe(false);
    hub.corrupt.clear();

    const data = 'onnx/model.onnx_data';
    const full = readFileSync(path.join(replica, data));
    const have = Math.floor(full.length * 0.3);
    await mkdir(path.join(folder(LAYA), 'onnx'), { recursive: true });
    await writeFile(path.join(folder(LAYA), `${data}.part`), full.subarray(0, have));
    const result = await fetchRepo(LAYA, { variant: 'fp32' });
    expect(result.files.find((f) => f.path === data)!.how).toBe('resumed');
    expect(hub.downloads(data).map((q) => q.range)).toEqual([`bytes=${have}-`]);
    expect(sha256(readFileSync(path.join(folder(LAYA), data)))).toBe(sha256(full));
  });
});
