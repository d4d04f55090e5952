// Label strategies (prompt versions), option-order rotations and per-type answer temperatures:
// what `assay eval --dataset --compare` and `assay calibrate` change, on the real engine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type EngineConfig, type Evaluator } from '../../src/engine/index.js';
import { ModelLoadError } from '../../src/engine/errors.js';
import { planRequest } from '../../src/engine/prompting/plan.js';
import { optionLetter, promptSet } from '../../src/engine/prompting/prompts.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import type { ChoiceQuestion, Question } from '../../src/engine/types.js';
import { choice, expectClose, noul, request, score, tinyFp32 } from './fixtures.js';

const budgets = { request: 64_000, question: 32_000, context: 32_768 };
const colours: ChoiceQuestion = {
  type: 'choice',
  instructions: 'Which colour is named?',
  criteria: { red: 'warm', green: null, blue: 'cold', 'dark purple': null },
};

/** The caller's question with its options rotated left by `shift`. */
function rotated(q: ChoiceQuestion, shift: number): ChoiceQuestion {
  const e = Object.entries(q.criteria);
  return { ...q, criteria: Object.fromEntries(e.map((_, i) => e[(i + shift) % e.length]!)) };
}

describe('label strategies, rotations and answer temperatures', () => {
  let modelDir: string;
  let codec: TextCodec;
  const open: Evaluator[] = [];
  const load = async (o: Omit<EngineConfig, 'modelDir'>) => {
    const e = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, plannerThreads: 0, ...o });
    open.push(e);
    return e;
  };

  beforeAll(async () => {
    modelDir = await tinyFp32();
    codec = await TextCodec.load(modelDir);
  });
  afterAll(async () => {
    await Promise.all(open.map((e) => e.close()));
  });

  it('letters: options are listed A. B. C. … and read as one token each, answers still keyed by option names', () => {
    expect([0, 1, 25, 26, 27, 254].map(optionLetter)).toEqual(['A', 'B', 'Z', 'AA', 'AB', 'IU']);
    const plan = planRequest(request({ c: choice }), codec, promptSet('letters'), codec.eosTokenId!, budgets);
    const q = plan.questions[0]!;
    expect(q.labels.map((l) => l.label)).toEqual(['A', 'B', 'C', 'D', 'E']);
    for (const l of q.labels) expect(l.tokens).toHaveLength(1);
    const text = codec.decode(q.suffix);
    // (JavaScript orders integer-like keys first, here and in the answer alike.)
    expect(text).toContain('A. 1\nB. 12: a number\nC. fox: a fox\nD. dog\nE. fox terrier: a dog breed');
    expect(text).toContain('Answer with the letter of one option.');
    // noul and score read as in v1.
    const v1 = planRequest(request({ n: noul, s: score }), codec, promptSet('v1'), codec.eosTokenId!, budgets);
    const lt = planRequest(request({ n: noul, s: score }), codec, promptSet('letters'), codec.eosTokenId!, budgets);
    expect(lt).toEqual(v1);
  });

  it('letters answers differ from names answers and keep the caller option names', async () => {
    const names = await load({});
    const letters = await load({ promptVersion: 'letters' });
    const a = (await names.evaluate(request({ c: colours }))).answers.c!;
    const b = (await letters.evaluate(request({ c: colours }))).answers.c!;
    if (a.type !== 'choice' || b.type !== 'choice') throw new Error('choice expected');
    expect(Object.keys(b.probabilities)).toEqual(Object.keys(colours.criteria));
    expect(Object.values(b.probabilities).reduce((x, y) => x + y, 0)).toBeCloseTo(1, 9);
    expect(
      Math.max(...Object.keys(a.probabilities).map((k) => Math.abs(a.probabilities[k]! - b.probabilities[k]!))),
    ).toBeGreaterThan(1e-3);
  });

  it('an unknown prompt version, bad rotations or bad temperatures fail the load with the reason', async () => {
    await expect(load({ promptVersion: 'v9' })).rejects.toThrow(/unknown prompt_version "v9"; known: v1, letters/);
    await expect(load({ optionRotations: 0 })).rejects.toThrow(ModelLoadError);
    await expect(load({ answerTemperatures: { noul: 0 } })).rejects.toThrow(
      /answer_temperature.noul must be a positive number/,
    );
  });

  for (const version of ['v1', 'letters']) {
    it(`${version}: k rotations average the answers of the k rotated option lists, mapped back to the caller's options`, async () => {
      const plain = await load({ promptVersion: version });
      const rot = await load({ promptVersion: version, optionRotations: 4 });
      const { answers, usage } = await rot.evaluate(request({ c: colours, n: noul }));
      const expected: Record<string, number> = { red: 0, green: 0, blue: 0, 'dark purple': 0 };
      for (let shift = 0; shift < 4; shift++) {
        const a = (await plain.evaluate(request({ c: rotated(colours, shift) }))).answers.c!;
        if (a.type !== 'choice') throw new Error('choice expected');
        for (const k of Object.keys(expected)) expected[k]! += a.probabilities[k]! / 4;
      }
      const c = answers.c!;
      if (c.type !== 'choice') throw new Error('choice expected');
      for (const k of Object.keys(expected)) expect(Math.abs(c.probabilities[k]! - expected[k]!)).toBeLessThan(1e-5);
      expect(c.choice).toBe(Object.entries(expected).sort((x, y) => y[1] - x[1])[0]![0]);
      // noul questions are asked once; the rotations' tokens are billed.
      expectClose((await plain.evaluate(request({ n: noul }))).answers.n!, answers.n!);
      const once = await plain.evaluate(request({ c: colours, n: noul }));
      expect(usage.input_tokens).toBeGreaterThan(once.usage.input_tokens);
    });
  }

  it('with as many rotations as options, a cyclic reordering of the options changes no answer', async () => {
    const rot = await load({ optionRotations: 4 });
    const a = (await rot.evaluate(request({ c: colours }))).answers.c!;
    const b = (await rot.evaluate(request({ c: rotated(colours, 1) }))).answers.c!;
    expectClose(a, b, 1e-6);
    const plain = await load({});
    const c = (await plain.evaluate(request({ c: colours }))).answers.c!;
    const d = (await plain.evaluate(request({ c: rotated(colours, 1) }))).answers.c!;
    // Without rotations the order matters (what the rotations are for).
    expect(() => expectClose(c, d, 1e-3)).toThrow();
  });

  it('rotations give the same answers packed and one pass per question', async () => {
    const packed = await load({ optionRotations: 3 });
    const unpacked = await load({ optionRotations: 3, packQuestions: false });
    const questions: Record<string, Question> = { c: colours, x: choice, n: noul };
    const a = await packed.evaluate(request(questions));
    const b = await unpacked.evaluate(request(questions));
    for (const k of Object.keys(questions)) expectClose(a.answers[k]!, b.answers[k]!, 1e-4);
  });

  it('answer temperatures divide each type’s label log-probabilities: log-odds shrink by T', async () => {
    const base = await load({});
    const hot = await load({ answerTemperatures: { noul: 2, choice: 0.5 } });
    const questions = { n: noul, c: colours, s: score };
    const a = (await base.evaluate(request(questions))).answers;
    const b = (await hot.evaluate(request(questions))).answers;
    const logit = (p: number) => Math.log(p / (1 - p));
    if (a.n?.type !== 'noul' || b.n?.type !== 'noul') throw new Error('noul expected');
    expect(logit(b.n.noul)).toBeCloseTo(logit(a.n.noul) / 2, 5);
    if (a.c?.type !== 'choice' || b.c?.type !== 'choice') throw new Error('choice expected');
    const ratio = (p: Record<string, number>) => Math.log(p.red! / p.blue!);
    expect(ratio(b.c.probabilities)).toBeCloseTo(ratio(a.c.probabilities) / 0.5, 4);
    expectClose(a.s!, b.s!, 1e-9); // score keeps T = 1
  });
});
