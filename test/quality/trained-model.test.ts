// A model that knows something: the tiny decoder trained on the tiny-tasks task (models/trained/,
// tools/train), written to ONNX by the generator from its weights, answers the held-out lines
// right through the real server and the real CLI (template, prefix/suffix split, packing, label
// reading) — far above chance — and its fp32 graph computes what the training forward computed.
import { mkdtempSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as evalCmd } from '../../src/commands/eval.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { readWeights } from '../../src/model-files/synth/weights.js';
import { KEY, startServer, type TestServer } from '../api/helpers.js';

const WEIGHTS = 'models/trained/tiny-tasks.safetensors';
const HELDOUT = 'examples/tiny-tasks-heldout.jsonl';

describe('the tiny model trained on tiny-tasks', () => {
  let srv: TestServer;
  let trained: Evaluator;
  let url: string;

  beforeAll(async () => {
    const dir = await ensureSynthModel({
      shape: 'tiny',
      dtype: 'int8',
      weights: WEIGHTS,
      out: 'models/generated/tiny-tasks-int8',
    });
    trained = await loadEvaluator({ modelDir: dir, threads: 1 });
    srv = await startServer({ evaluator: trained });
    await srv.app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(srv.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await srv.app.close();
    await trained.close();
  });

  it('is not marked synthetic: its manifest names the weights it was written from', () => {
    const manifest = JSON.parse(readFileSync('models/generated/tiny-tasks-int8/assay.json', 'utf8'));
    expect(manifest.synthetic).toBe(false);
    expect(manifest.warning).toBeUndefined();
    expect(manifest.trained).toMatchObject({
      weights: 'tiny-tasks.safetensors',
      task: expect.stringContaining('tiny-tasks') as string,
    });
    expect(trained.synthetic).toBe(false);
  });

  it('answers the held-out lines through the server far above chance (noul ≥ 0.9, choice ≥ 0.9, score ≥ 0.9)', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const sink = (into: string[]) => new Writable({ write: (c, _e, cb) => void (into.push(String(c)), cb()) });
    const dir = mkdtempSync(join(tmpdir(), 'assay-trained-'));
    const code = await evalCmd(['--dataset', HELDOUT, '--url', url, '--out', dir], {
      stdout: sink(out),
      stderr: sink(err),
      env: { ASSAY_API_KEY: KEY },
    });
    expect(code, err.join('')).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    expect(report.lines).toBe(90);
    // Chance: noul 0.5, choice 0.25-0.33, score 0.25.
    expect(report.metrics.noul.accuracy).toBeGreaterThanOrEqual(0.9);
    expect(report.metrics.choice.accuracy).toBeGreaterThanOrEqual(0.9);
    expect(report.metrics.score.exactAccuracy).toBeGreaterThanOrEqual(0.9);
    expect(report.metrics.score.mae).toBeLessThan(0.3);
    // Each kind of question too (about 30-45 each), so the model reads what is asked, not just the type.
    const kinds = {
      refund: 'noul',
      product: 'noul',
      weekend: 'noul',
      'product-choice': 'choice',
      team: 'choice',
      urgency: 'score',
      units: 'score',
    } as const;
    for (const [tag, type] of Object.entries(kinds)) {
      const m = report.byTag[tag][type];
      expect(m.count, tag).toBeGreaterThanOrEqual(20);
      expect(type === 'score' ? m.exactAccuracy : m.accuracy, tag).toBeGreaterThanOrEqual(0.85);
    }
    expect(out.join('')).not.toContain('synthetic (random weights)');
  });

  it('--compare int8,fp32 writes the fp32 arm from the same trained weights: int8 flips (almost) nothing', async () => {
    const err: string[] = [];
    const sink = (into: string[]) => new Writable({ write: (c, _e, cb) => void (into.push(String(c)), cb()) });
    const dir = mkdtempSync(join(tmpdir(), 'assay-trained-'));
    const code = await evalCmd(
      ['--dataset', HELDOUT, '--model', 'tiny-tasks-1', '--compare', 'int8,fp32', '--out', dir],
      { stdout: sink([]), stderr: sink(err), env: {} },
    );
    expect(code, err.join('')).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    for (const arm of report.arms) {
      expect(arm.synthetic).toBe(false);
      expect(arm.metrics.noul.accuracy).toBeGreaterThanOrEqual(0.9);
      expect(arm.metrics.choice.accuracy).toBeGreaterThanOrEqual(0.9);
    }
    for (const type of ['noul', 'choice', 'score']) expect(report.flips[type].flipped).toBeLessThanOrEqual(3);
  });

  it('its fp32 graph computes what the training forward computed (the first held-out questions within 1e-4)', async () => {
    const reference = JSON.parse(readWeights(WEIGHTS).metadata.reference!) as number[][];
    const dir = await ensureSynthModel({
      shape: 'tiny',
      dtype: 'fp32',
      weights: WEIGHTS,
      out: join(mkdtempSync(join(tmpdir(), 'assay-trained-')), 'fp32'),
    });
    const fp32 = await loadEvaluator({ modelDir: dir, threads: 1 });
    try {
      const lines = readFileSync(HELDOUT, 'utf8')
        .split('\n')
        .filter(Boolean)
        .slice(0, 3)
        .map((l) => JSON.parse(l));
      let row = 0;
      let maxDiff = 0;
      for (const line of lines) {
        const { answers } = await fp32.evaluate({ state: line.state, questions: line.questions });
        for (const [id, q] of Object.entries(line.questions as Record<string, { type: string; criteria: unknown }>)) {
          const a = answers[id]!;
          const probs =
            a.type === 'noul'
              ? [a.noul, 1 - a.noul]
              : q.type === 'choice'
                ? Object.keys(q.criteria as object).map((k) => a.probabilities[k]!)
                : Object.values(a.probabilities);
          probs.forEach((p, i) => (maxDiff = Math.max(maxDiff, Math.abs(p - reference[row]![i]!))));
          row++;
        }
      }
      expect(row).toBe(9);
      expect(maxDiff).toBeLessThan(1e-4);
    } finally {
      await fp32.close();
    }
  });
});
