// `assay eval --dataset` on an encoder-family model, through the same service function as the API:
// the example dataset answered by the Laya replica (metrics per type, coverage), and an escalating
// entry whose first model is the Laya folder and whose second is the tiny decoder (the escalation
// sweep). The family is detected from the folder: the registry names only its path.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { run as evalCmd } from '../../src/commands/eval.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { ensureLayaReplica } from '../../tools/families/laya-replica.js';
import { ensureNliReplica } from '../../tools/families/nli-replica.js';

const work = mkdtempSync(join(tmpdir(), 'assay-eval-families-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function run(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) => new Writable({ write: (c, _e, cb) => void (into.push(String(c)), cb()) });
  const code = await evalCmd(args, { stdout: sink(out), stderr: sink(err), env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

async function registry(): Promise<string> {
  const file = join(work, 'registry.json');
  writeFileSync(
    file,
    JSON.stringify({
      default: 'laya-1',
      models: {
        'laya-1': { path: ensureLayaReplica(), description: 'Laya replica', release_date: '2026-11-27' },
        'nli-1': { path: ensureNliReplica('deberta'), description: 'NLI replica', release_date: '2026-11-27' },
        'tiny-1': {
          path: await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' }),
          description: 'tiny decoder',
          release_date: '2026-11-27',
        },
        'nli-cascade': {
          escalate: { first: 'nli-1', second: 'tiny-1', below: { noul: 0.9, choice: 0.5, score: 0.5 } },
          description: 'NLI pairs, escalating uncertain answers to the decoder',
          release_date: '2026-11-27',
        },
        'laya-cascade': {
          escalate: { first: 'laya-1', second: 'tiny-1', below: { noul: 0.9, choice: 0.5, score: 0.5 } },
          description: 'Laya, escalating uncertain answers to the decoder',
          release_date: '2026-11-27',
        },
      },
      aliases: {},
    }),
  );
  return file;
}

/** `assay eval --dataset` of the example dataset on a registered model, into its own folder; it succeeded. */
async function evalDataset(model: string) {
  const out = join(work, model);
  const r = await run([
    '--dataset',
    'examples/support-tickets.jsonl',
    '--model',
    model,
    '--registry',
    await registry(),
    '--out',
    out,
  ]);
  expect(r.code, r.err).toBe(0);
  return { r, out };
}

describe.each([
  ['laya-1', 'laya-cascade'],
  ['nli-1', 'nli-cascade'],
])('assay eval --dataset on %s', (model, cascade) => {
  it('answers every line of the example dataset: metrics per type, coverage, loudly synthetic', async () => {
    const { r, out } = await evalDataset(model);
    expect(r.out).toContain('synthetic (random weights)');
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report).toMatchObject({ lines: 32, answers: 96, synthetic: true, model });
    expect([report.metrics.noul.count, report.metrics.choice.count, report.metrics.score.count]).toEqual([32, 32, 32]);
    expect(Object.keys(report.coverage.byType).sort()).toEqual(['choice', 'noul', 'score']);
  }, 300_000);

  it('an escalating entry whose first model is the family folder: the escalation sweep', async () => {
    const { r, out } = await evalDataset(cascade);
    expect(r.out).toContain('## Escalation: accuracy against escalation rate');
    expect(r.out).toContain(`${model} answers; a question whose certainty`);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.model).toBe(cascade);
    expect(report.escalation.length).toBeGreaterThan(2);
  }, 300_000);
});

describe('assay calibrate on a Laya folder', () => {
  it("fits temperatures into the folder's assay.json, which the family's answers then apply on top of its own", async () => {
    const { cpSync, mkdirSync, symlinkSync } = await import('node:fs');
    const { run: calibrate } = await import('../../src/commands/calibrate.js');
    const { loadEvaluator } = await import('../../src/engine/index.js');
    const replica = ensureLayaReplica();
    const dir = join(work, 'laya-copy');
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    for (const f of ['model.onnx', 'model.onnx_data']) symlinkSync(join(replica, 'onnx', f), join(dir, 'onnx', f));
    for (const f of ['tokenizer', 'rl_agent_config.json', 'config.json', 'assay.json'])
      cpSync(join(replica, f), join(dir, f), { recursive: true });
    const reg = join(work, 'calibrate-registry.json');
    writeFileSync(
      reg,
      JSON.stringify({
        default: 'laya-copy',
        models: { 'laya-copy': { path: dir, description: 'Laya replica copy', release_date: '2026-11-27' } },
        aliases: {},
      }),
    );
    const request = {
      state: 'My package arrived two weeks late and the box was crushed.',
      questions: { refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' } },
    } as const;
    const before = await loadEvaluator({ modelDir: dir, threads: 1, engineThread: false });
    const p0 = ((await before.evaluate(request)).answers.refund as { noul: number }).noul;
    await before.close();

    const out: string[] = [];
    const sink = new Writable({ write: (c, _e, cb) => void (out.push(String(c)), cb()) });
    const code = await calibrate(
      ['--dataset', 'examples/support-tickets.jsonl', '--model', 'laya-copy', '--registry', reg, '--holdout', '0.25'],
      {
        stdout: sink,
        stderr: sink,
        env: {},
      },
    );
    expect(code, out.join('')).toBe(0);
    const manifest = JSON.parse(readFileSync(join(dir, 'assay.json'), 'utf8')) as {
      answer_temperature?: Record<string, number>;
    };
    const t = manifest.answer_temperature?.noul;
    expect(t).toBeGreaterThan(0);

    const after = await loadEvaluator({ modelDir: dir, threads: 1, engineThread: false });
    const p1 = ((await after.evaluate(request)).answers.refund as { noul: number }).noul;
    await after.close();
    // P(yes) with the yes/no log-probabilities divided by T, then normalized (as for a decoder's labels).
    const z = Math.log(p0 / (1 - p0)) / t!;
    expect(p1).toBeCloseTo(1 / (1 + Math.exp(-z)), 12);
  }, 300_000);
});
