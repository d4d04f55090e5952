// assay calibrate on the tiny synthetic model: labels sampled from the model's own answer
// distribution at a known temperature T* = 2 must be recovered (±10%), the held-out ECE must drop,
// and the temperatures written into assay.json must be what the engine applies at its next load.
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as calibrateCmd } from '../../src/commands/calibrate.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import type { Question } from '../../src/engine/types.js';
import { split, withTemperature } from '../../src/quality/calibration.js';
import { seededRandom } from '../../src/common/index.js';
import { tinyFp32 } from '../engine/fixtures.js';

const T_STAR = 2;
const LINES = 200;
const PER_TYPE = 4;
const DISAGREE = 60;
const WORDS = [
  'invoice',
  'refund',
  'crash',
  'login',
  'parcel',
  'late',
  'great',
  'broken',
  'price',
  'upgrade',
  'password',
  'screen',
  'delivery',
  'thanks',
  'error',
  'account',
];

const TEAMS = [
  'billing',
  'support',
  'shipping',
  'sales',
  'legal',
  'security',
  'design',
  'finance',
  'returns',
  'mobile',
  'web',
  'hardware',
];
const ADJECTIVES = ['urgent', 'serious', 'costly', 'common', 'clear', 'recent'];
const LEVELS = ['none', 'low', 'some', 'medium', 'high', 'extreme', 'minor', 'major'];

/** `n` distinct items in a random order. */
function pick<T>(items: T[], n: number, random: () => number): T[] {
  const rest = [...items];
  return Array.from({ length: n }, () => rest.splice(Math.floor(random() * rest.length), 1)[0]!);
}

function sample(probs: number[], random: () => number): number {
  let u = random();
  for (let i = 0; i < probs.length; i++) if ((u -= probs[i]!) < 0) return i;
  return probs.length - 1;
}

async function run(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) => new Writable({ write: (c, _e, cb) => void (into.push(String(c)), cb()) });
  const code = await calibrateCmd(args, { stdout: sink(out), stderr: sink(err), env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

describe('assay calibrate', () => {
  let dir: string;
  let modelDir: string;
  let registry: string;
  let dataset: string;
  /** Training lines labelled at T*, held-out lines with the model's own top answers: the fit makes held-out worse. */
  let disagreeing: string;
  /** The model's assay.json before any calibration. */
  let uncalibrated: string;
  const open: Evaluator[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'assay-calibrate-'));
    modelDir = join(dir, 'model');
    cpSync(await tinyFp32(), modelDir, { recursive: true });
    // Sharper answers than the generator's (token temperature 0.3, not 0.7) carry more information
    // about T* per label, so a few hundred lines pin it down.
    const m = JSON.parse(readFileSync(join(modelDir, 'assay.json'), 'utf8'));
    writeFileSync(join(modelDir, 'assay.json'), JSON.stringify({ ...m, temperature: 0.3 }));
    uncalibrated = readFileSync(join(modelDir, 'assay.json'), 'utf8');
    registry = join(dir, 'registry.json');
    writeFileSync(
      registry,
      JSON.stringify({
        default: 'm',
        models: { m: { path: 'model', description: 'tiny', release_date: '2026-11-22' } },
        aliases: {},
      }),
    );
    // Labels sampled from the model's own answers made softer by T*: a perfectly calibrated model
    // at temperature T* would have produced them.
    const model = await loadEvaluator({ modelDir, threads: 1 });
    open.push(model);
    const random = seededRandom(7);
    const lines: string[] = [];
    const disagree: string[] = [];
    // The disagreeing set: the first DISAGREE lines' noul questions (a small, quick run).
    const { heldOut } = split(DISAGREE, 0.3, 1);
    const held = new Set(heldOut);
    for (let i = 0; i < LINES; i++) {
      const words = Array.from({ length: 8 }, () => WORDS[Math.floor(random() * WORDS.length)]!);
      const state = `Ticket ${i}: ${words.join(' ')}.`;
      // Several questions of each type a line (packed: one pass), about different words; more
      // noul ones, whose two outcomes say less about T* each.
      const questions: Record<string, Question> = {};
      words.forEach((w, k) => {
        questions[`n${k}`] = { type: 'noul', instructions: `Does the ticket mention ${w}?` };
        if (k >= PER_TYPE) return;
        // Options and levels drawn anew for each question: answers that do not all lean alike.
        const teams = pick(TEAMS, 2 + Math.floor(random() * 3), random);
        questions[`c${k}`] = {
          type: 'choice',
          instructions: `Which team handles ${w}?`,
          criteria: Object.fromEntries(teams.map((t) => [t, null])),
        };
        questions[`s${k}`] = {
          type: 'score',
          instructions: `How ${pick(ADJECTIVES, 1, random)[0]} is the ${w} issue?`,
          criteria: pick(LEVELS, 3 + Math.floor(random() * 3), random),
        };
      });
      const expected: Record<string, unknown> = {};
      const top: Record<string, unknown> = {};
      const { answers } = await model.evaluate({ state, questions });
      for (const [id, a] of Object.entries(answers)) {
        const outcomes = a.type === 'noul' ? ['yes', 'no'] : Object.keys(a.probabilities);
        const probs = a.type === 'noul' ? [a.noul, 1 - a.noul] : outcomes.map((o) => a.probabilities[o]!);
        const label = (k: number) => (a.type === 'noul' ? k === 0 : a.type === 'choice' ? outcomes[k] : k);
        expected[id] = label(sample(withTemperature(probs, T_STAR), random));
        top[id] = label(probs.indexOf(Math.max(...probs)));
      }
      lines.push(JSON.stringify({ state, questions, expected }));
      // Held out: the model's own top answers (a softer temperature only makes those worse).
      const noul = (o: Record<string, unknown>) =>
        Object.fromEntries(Object.entries(o).filter(([id]) => id[0] === 'n'));
      if (i < DISAGREE)
        disagree.push(
          JSON.stringify({ state, questions: noul(questions), expected: noul(held.has(i) ? top : expected) }),
        );
    }
    dataset = join(dir, 'sampled.jsonl');
    writeFileSync(dataset, `${lines.join('\n')}\n`);
    disagreeing = join(dir, 'disagreeing.jsonl');
    writeFileSync(disagreeing, `${disagree.join('\n')}\n`);
  });
  afterAll(async () => {
    await Promise.all(open.map((e) => e.close()));
  });

  it('without --write it shows what it would change and writes nothing', async () => {
    const before = readFileSync(join(modelDir, 'assay.json'), 'utf8');
    const r = await run(['--dataset', dataset, '--registry', registry]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/\| noul \| \d+ \| \d+ \| 1\.000 → 1\.9\d\d \|/);
    expect(r.out).toContain(
      `Nothing written: run again with --write to write these temperatures into ${join(modelDir, 'assay.json')}`,
    );
    // Its warnings (the synthetic model) carry its own name, not assay eval's.
    expect(r.err).toContain('assay calibrate: m is a synthetic model with random weights');
    expect(r.err).not.toContain('assay eval:');
    expect(readFileSync(join(modelDir, 'assay.json'), 'utf8')).toBe(before);
    expect(existsSync(join(modelDir, 'assay.json.tmp'))).toBe(false);
  });

  it(`recovers T* = ${T_STAR} per type within 10%, cuts held-out ECE, and the engine applies what it wrote`, async () => {
    const r = await run(['--dataset', dataset, '--registry', registry, '--write']);
    expect(r.code, r.err).toBe(0);
    const manifest = JSON.parse(readFileSync(join(modelDir, 'assay.json'), 'utf8'));
    expect(manifest.synthetic).toBe(true); // the rest of the manifest is kept
    for (const type of ['noul', 'choice', 'score']) {
      const t = manifest.answer_temperature[type];
      expect(Math.abs(t / T_STAR - 1), `${type}: fitted ${t}`).toBeLessThan(0.1);
      const [before, after] = manifest.calibration.held_out[type].ece;
      expect(after, `${type} held-out ECE ${before} → ${after}`).toBeLessThan(before);
    }
    expect(r.out).toContain(
      `| noul | ${0.7 * LINES * 8} | ${0.3 * LINES * 8} | 1.000 → ${manifest.answer_temperature.noul.toFixed(3)} |`,
    );

    // The next load serves the calibrated answers: noul log-odds divided by the fitted temperature.
    const plain = await loadEvaluator({ modelDir, threads: 1, answerTemperatures: {} });
    const calibrated = await loadEvaluator({ modelDir, threads: 1 });
    open.push(plain, calibrated);
    const request = {
      state: 'Ticket: refund for a broken screen',
      questions: { n: { type: 'noul', instructions: 'Is it about money?' } as Question },
    };
    const a = (await plain.evaluate(request)).answers.n!;
    const b = (await calibrated.evaluate(request)).answers.n!;
    if (a.type !== 'noul' || b.type !== 'noul') throw new Error('noul expected');
    const logit = (p: number) => Math.log(p / (1 - p));
    expect(logit(b.noul)).toBeCloseTo(logit(a.noul) / manifest.answer_temperature.noul, 5);

    // Calibrating again on the same labels finds the model calibrated: the temperatures stay put.
    const again = await run(['--dataset', dataset, '--registry', registry, '--write']);
    expect(again.code, again.err).toBe(0);
    const next = JSON.parse(readFileSync(join(modelDir, 'assay.json'), 'utf8'));
    for (const type of ['noul', 'choice', 'score'])
      expect(next.answer_temperature[type] / manifest.answer_temperature[type]).toBeCloseTo(1, 2);
  });

  it('--write refuses a temperature that makes the held-out split worse, and --force writes it', async () => {
    const manifestFile = join(modelDir, 'assay.json');
    writeFileSync(manifestFile, uncalibrated);
    const before = JSON.parse(uncalibrated);
    const r = await run(['--dataset', disagreeing, '--registry', registry, '--write']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(
      /Not written: noul's temperature [\d.]+ makes the held-out split worse \(log loss [\d.]+ → [\d.]+, ECE [\d.]+ → [\d.]+\)/,
    );
    expect(JSON.parse(readFileSync(manifestFile, 'utf8')).answer_temperature?.noul).toBe(
      before.answer_temperature?.noul,
    );
    const forced = await run(['--dataset', disagreeing, '--registry', registry, '--write', '--force']);
    expect(forced.code, forced.err).toBe(0);
    expect(JSON.parse(readFileSync(manifestFile, 'utf8')).answer_temperature.noul).not.toBe(
      before.answer_temperature?.noul,
    );
  });
});
