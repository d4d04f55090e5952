// `assay eval --dataset` on a model of each family, through the same service function as the API:
// the example dataset answered by each family's replica (metrics per type, coverage), and an
// escalating entry whose first model is the Laya (or NLI) folder and whose second is the tiny
// decoder (the escalation sweep). The family is detected from the folder: the registry names only
// its path. Arbiter's fixed slots read exactly 6 score levels, so it answers a dataset of its own.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { run as evalCmd } from '../../src/commands/eval.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { ensureLayaReplica } from '../../tools/families/laya/replica.js';
import { ensureNliReplica } from '../../tools/families/nli/replica.js';
import { ensureKevReplica } from '../../tools/families/kev/replica.js';
import { ensureDeciderReplica } from '../../tools/families/decider/replica.js';
import { ensureLabelTokensReplica } from '../../tools/families/label-tokens/replica.js';
import { ensureSlotsReplica } from '../../tools/families/decider-slots/replica.js';
import { ensureDecisionReplica } from '../../tools/families/decision/replica.js';
import { ensureArbiterReplica } from '../../tools/families/arbiter/replica.js';

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
        'kev-1': { path: ensureKevReplica(), description: 'Kev replica', release_date: '2026-11-27' },
        'decider-1': { path: await ensureDeciderReplica(), description: 'decider replica', release_date: '2026-11-27' },
        'label-tokens-1': {
          path: await ensureLabelTokensReplica('generic'),
          description: 'label-tokens replica (generic contract)',
          release_date: '2026-11-27',
        },
        'slots-1': { path: ensureSlotsReplica(), description: 'decider slot-head replica', release_date: '2026-11-27' },
        'decision-1': { path: ensureDecisionReplica(), description: 'Decision replica', release_date: '2026-11-27' },
        'arbiter-1': { path: ensureArbiterReplica(), description: 'Arbiter replica', release_date: '2026-11-27' },
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

/** `assay eval --dataset` of a dataset (the example one by default) on a registered model, into its own folder; it succeeded. */
async function evalDataset(model: string, dataset = 'examples/support-tickets.jsonl') {
  const out = join(work, model);
  const r = await run(['--dataset', dataset, '--model', model, '--registry', await registry(), '--out', out]);
  expect(r.code, r.err).toBe(0);
  return { r, out };
}

describe.each([
  ['kev-1', 'kev-pointer'],
  ['decider-1', 'decider-labels'],
  ['label-tokens-1', 'label-tokens'],
  ['slots-1', 'decider-slots'],
  ['decision-1', 'decision-endpoint'],
])('assay eval --dataset on %s (%s)', (model) => {
  it('answers every line of the example dataset: metrics per type, coverage, loudly synthetic', async () => {
    const { r, out } = await evalDataset(model);
    expect(r.out).toContain('synthetic (random weights)');
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report).toMatchObject({ lines: 32, answers: 96, synthetic: true, model });
    expect([report.metrics.noul.count, report.metrics.choice.count, report.metrics.score.count]).toEqual([32, 32, 32]);
  }, 300_000);
});

describe('assay eval --dataset on arbiter-1 (arbiter-fixed)', () => {
  it('answers a dataset whose scores have the 6 levels its slots read', async () => {
    const levels = ['none', 'trivial', 'minor', 'moderate', 'serious', 'critical'];
    const lines = readFileSync('examples/support-tickets.jsonl', 'utf8')
      .trim()
      .split('\n')
      .slice(0, 8)
      .map((l) => {
        const line = JSON.parse(l);
        line.questions.severity.criteria = levels;
        line.expected.severity = Math.min(5, 2 * line.expected.severity);
        return JSON.stringify(line);
      });
    const dataset = join(work, 'six-levels.jsonl');
    writeFileSync(dataset, `${lines.join('\n')}\n`);
    const { out } = await evalDataset('arbiter-1', dataset);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report).toMatchObject({ lines: 8, answers: 24, synthetic: true, model: 'arbiter-1' });
    expect([report.metrics.noul.count, report.metrics.choice.count, report.metrics.score.count]).toEqual([8, 8, 8]);
  }, 300_000);
});

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
      [
        '--dataset',
        'examples/support-tickets.jsonl',
        '--model',
        'laya-copy',
        '--registry',
        reg,
        '--holdout',
        '0.25',
        '--write',
        '--force',
      ],
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
