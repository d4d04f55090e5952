// A model trained on a family's contract: the tiny decoder trained on the tiny-tasks tickets
// through the decider contract (models/trained/tiny-decider.safetensors, tools/train with
// --contract decider), written to ONNX by the generator with its folder's decision.json and
// calibration.json. `assay eval --compare decider-labels,decoder` runs the same held-out lines
// through the contract and through Assay's generic prompt; the contract arm is right at least as
// often as the training record says (less what int8 may flip), and the fp32 graph computes what
// the training forward computed on the held-out rows (tools/train/check-onnx.ts's comparison).
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { run as evalCmd } from '../../src/commands/eval.js';
import { TextCodec } from '../../src/internal.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { readWeights } from '../../src/model-files/synth/weights.js';
import { checkOnnx } from '../../tools/train/check-onnx.js';
import { deciderRows } from '../../tools/train/decider-rows.js';

const WEIGHTS = 'models/trained/tiny-decider.safetensors';
const HELDOUT = 'examples/tiny-tasks-heldout.jsonl';
/** The registry's folder of tiny-decider-1 (models/registry.json). */
const INT8 = 'models/generated/tiny-decider-int8';
/** Held-out lines whose rows the parity check runs (6 rows a line; the full vocabulary's logits each). */
const PARITY_LINES = 6;
/**
 * Answers of a type int8 may flip against the fp32 training forward: the int8 graph moves the
 * candidates' log-probabilities by up to about 0.3 (tiny-tasks' int8 folder: 0.28, no argmax
 * changed on 270 rows); 3 of 90 leaves room for a question near its boundary.
 */
const INT8_SLACK = 3 / 90;

/** Two arms of 90 lines each: about 20 s on quiet cores, minutes on 2 shared ones. */
const EVAL_TIMEOUT = 300_000;

const sink = (into: string[]) => new Writable({ write: (c, _e, cb) => void (into.push(String(c)), cb()) });
const metadata = () => readWeights(WEIGHTS).metadata;

describe('the tiny model trained on the decider contract', () => {
  beforeAll(async () => {
    await ensureSynthModel({ shape: 'tiny', dtype: 'int8', weights: WEIGHTS, out: INT8 });
  });

  it('its folder declares the contract: decision.json decider-labels-v1 and the fitted calibration.json', () => {
    const files = JSON.parse(metadata().folder_files!) as Record<string, Record<string, unknown>>;
    const decision = JSON.parse(readFileSync(join(INT8, 'decision.json'), 'utf8'));
    const calibration = JSON.parse(readFileSync(join(INT8, 'calibration.json'), 'utf8'));
    expect(decision.layout).toBe('decider-labels-v1');
    expect(decision).toEqual(files['decision.json']);
    expect(calibration).toEqual(files['calibration.json']);
    expect(calibration.temperature).toHaveLength(3);
    const manifest = JSON.parse(readFileSync(join(INT8, 'assay.json'), 'utf8'));
    expect(manifest.synthetic).toBe(false);
    expect(manifest.trained.task).toContain('decider contract');
  });

  it(
    'assay eval --compare decider-labels,decoder: both arms on the held-out lines, the contract arm right as the training record says',
    async () => {
      const err: string[] = [];
      const dir = mkdtempSync(join(tmpdir(), 'assay-decider-'));
      const code = await evalCmd(
        ['--dataset', HELDOUT, '--model', 'tiny-decider-1', '--compare', 'decider-labels,decoder', '--out', dir],
        { stdout: sink([]), stderr: sink(err), env: {} },
      );
      expect(code, err.join('')).toBe(0);
      const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
      const [contract, generic] = report.arms;
      expect([contract.arm, generic.arm]).toEqual(['decider-labels', 'decoder']);
      for (const arm of report.arms) {
        expect(arm.model).toBe('tiny-decider-1');
        expect(arm.synthetic).toBe(false);
        expect(arm.answers).toBe(270);
      }
      // Another prompt: no chat template, but a score question is one row per level.
      expect(contract.usage.input_tokens).not.toBe(generic.usage.input_tokens);
      // The torch forward's held-out accuracy per type, recorded when the weights were written.
      const record = JSON.parse(metadata().heldout_accuracy!) as Record<'noul' | 'choice' | 'score', number>;
      expect(contract.metrics.noul.accuracy).toBeGreaterThanOrEqual(record.noul - INT8_SLACK);
      expect(contract.metrics.choice.accuracy).toBeGreaterThanOrEqual(record.choice - INT8_SLACK);
      expect(contract.metrics.score.exactAccuracy).toBeGreaterThanOrEqual(record.score - INT8_SLACK);
      // Through the generic prompt the same weights read label tokens they were never trained on
      // (their embedding rows are zero: every answer uniform), so the contract is what they know.
      expect(generic.metrics.noul.accuracy).toBeLessThan(contract.metrics.noul.accuracy);
      expect(generic.metrics.score.exactAccuracy).toBeLessThan(contract.metrics.score.exactAccuracy);
      expect(generic.metrics.noul.logLoss).toBeCloseTo(Math.log(2), 6);
    },
    EVAL_TIMEOUT,
  );

  it('its fp32 graph computes what the training forward computed on the held-out rows (within 1e-4)', async () => {
    const fp32 = await ensureSynthModel({
      shape: 'tiny',
      dtype: 'fp32',
      weights: WEIGHTS,
      out: join(mkdtempSync(join(tmpdir(), 'assay-decider-')), 'fp32'),
    });
    const lines = readFileSync(HELDOUT, 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(0, PARITY_LINES)
      .map((l) => JSON.parse(l));
    const rows = deciderRows(lines, await TextCodec.load(fp32));
    expect(rows).toHaveLength(PARITY_LINES * 6);
    const reference = (JSON.parse(metadata().heldout_logps!) as number[][]).slice(0, rows.length);
    const r = await checkOnnx({ rows, reference, modelDir: fp32, dtype: 'fp32' });
    // fp32 against fp32: the same math in another order (tiny-tasks: 4.2e-6 over 270 rows); the
    // reference is stored to 7 decimals.
    expect(r.maxAbsDiff).toBeLessThan(1e-4);
    expect(r.argmaxChanged).toBe(0);
  });
});

describe('--compare with family arms', () => {
  it(
    'runs tiny-tasks-1 (trained on the generic prompt) through the decider contract too: its own prompt stays right',
    async () => {
      const err: string[] = [];
      const dir = mkdtempSync(join(tmpdir(), 'assay-decider-'));
      const code = await evalCmd(
        ['--dataset', HELDOUT, '--model', 'tiny-tasks-1', '--compare', 'decoder,decider-labels', '--out', dir],
        { stdout: sink([]), stderr: sink(err), env: {} },
      );
      expect(code, err.join('')).toBe(0);
      const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
      const [generic, contract] = report.arms;
      expect([generic.arm, contract.arm]).toEqual(['decoder', 'decider-labels']);
      expect(generic.metrics.choice.accuracy).toBeGreaterThanOrEqual(0.9);
      expect(generic.metrics.noul.accuracy).toBeGreaterThanOrEqual(0.9);
      // Another prompt: the contract's rows, not the chat template's.
      expect(contract.usage.input_tokens).not.toBe(generic.usage.input_tokens);
      expect(contract.answers).toBe(270);
      // Its label tokens there (the letters) were never trained: zero embedding rows, uniform answers.
      expect(contract.metrics.noul.logLoss).toBeCloseTo(Math.log(2), 6);
    },
    EVAL_TIMEOUT,
  );

  it('a server (--url) runs its models as configured: a family arm is refused before anything is sent', async () => {
    const err: string[] = [];
    const code = await evalCmd(
      ['--dataset', HELDOUT, '--url', 'http://127.0.0.1:9', '--compare', 'decoder,decider-labels'],
      { stdout: sink([]), stderr: sink(err), env: { ASSAY_API_KEY: 'k' } },
    );
    expect(code).toBe(2);
    expect(err.join('')).toContain(
      '"decoder": a server (--url) runs its models as configured: compare model names only',
    );
  });
});
