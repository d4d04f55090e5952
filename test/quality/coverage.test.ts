// Coverage at an error budget and the paired bootstrap, against values worked out by hand on small
// fixed inputs.
import { describe, expect, it } from 'vitest';
import type { Answer } from '../../src/protocol/index.js';
import {
  answerCorrect,
  certainty,
  coverageAtBudget,
  errorUpperBound,
  minKeptForBudget,
  riskCoverage,
} from '../../src/quality/coverage.js';
import { drift, pairedBootstrap, worse } from '../../src/quality/bootstrap.js';
import { riskCoverageSvg } from '../../src/quality/risk-coverage-svg.js';

// Ten answers, most certain first: ✓ ✓ (✓ ✗ tied at 0.9) ✓ ✓ (✗ ✓ tied at 0.6) ✗ ✗
const TEN = [
  [0.99, true],
  [0.95, true],
  [0.9, true],
  [0.9, false],
  [0.8, true],
  [0.7, true],
  [0.6, false],
  [0.6, true],
  [0.55, false],
  [0.5, false],
].map(([c, ok]) => ({ certainty: c as number, correct: ok as boolean }));

describe('coverage at an error budget', () => {
  it('the risk–coverage curve keeps tied certainties together', () => {
    expect(riskCoverage(TEN).map((p) => [p.threshold, p.kept, p.errors])).toEqual([
      [0.99, 1, 0],
      [0.95, 2, 0],
      [0.9, 4, 1], // both 0.9 answers, one wrong: 1/4
      [0.8, 5, 1],
      [0.7, 6, 1],
      [0.6, 8, 2],
      [0.55, 9, 3],
      [0.5, 10, 4],
    ]);
  });

  it('the largest share kept within the budget, and its threshold', () => {
    // 5%: only the two error-free answers above the tie at 0.9; the threshold halfway between 0.95 (kept) and 0.9.
    const at5 = coverageAtBudget(TEN, 0.05);
    expect(at5).toMatchObject({ coverage: 0.2, kept: 2, errors: 0, risk: 0 });
    expect(at5.threshold).toBeCloseTo(0.925, 12);
    // 20%: down to 0.7 (1 wrong in 6 = 16.7%); at 0.6 it is 2 in 8 = 25%.
    expect(coverageAtBudget(TEN, 0.2)).toMatchObject({ coverage: 0.6, kept: 6, threshold: expect.closeTo(0.65, 12) });
    expect(coverageAtBudget(TEN, 0.25)).toMatchObject({ coverage: 0.8, kept: 8, threshold: expect.closeTo(0.575, 12) });
    // All kept: the least certain answer's certainty.
    expect(coverageAtBudget(TEN, 0.4)).toMatchObject({ coverage: 1, threshold: 0.5 });
    // The threshold keeps exactly the answers counted.
    for (const b of [0.05, 0.2, 0.25, 0.4]) {
      const c = coverageAtBudget(TEN, b);
      expect(TEN.filter((x) => x.certainty >= c.threshold!).length).toBe(c.kept);
    }
    // The most certain answer wrong: no threshold meets 5%.
    expect(
      coverageAtBudget(
        [
          { certainty: 0.9, correct: false },
          { certainty: 0.8, correct: true },
        ],
        0.05,
      ),
    ).toMatchObject({ coverage: 0, kept: 0, threshold: null, enough: false, labeledNeeded: null });
  });

  it('says when there are too few answers: 59 error-free kept answers show 5% at 95%', () => {
    // ⌈ln 0.05 / ln 0.95⌉ = ⌈58.4⌉ = 59; ⌈ln 0.05 / ln 0.99⌉ = ⌈298.1⌉ = 299
    expect(minKeptForBudget(0.05)).toBe(59);
    expect(minKeptForBudget(0.01)).toBe(299);
    expect(errorUpperBound(0, 59)).toBeLessThanOrEqual(0.05);
    expect(errorUpperBound(0, 58)).toBeGreaterThan(0.05);
    // 1 − 0.05^(1/2) = 0.7764; Clopper–Pearson one-sided 95% for 1 of 10 = 0.3942 (tables)
    expect(errorUpperBound(0, 2)).toBeCloseTo(1 - Math.sqrt(0.05), 12);
    expect(errorUpperBound(1, 10)).toBeCloseTo(0.3942, 4);
    const c = coverageAtBudget(TEN, 0.05);
    expect(c).toMatchObject({ enough: false, keptNeeded: 59, labeledNeeded: 295 }); // 59 / 0.2
    expect(c.riskUpper95).toBeCloseTo(1 - Math.sqrt(0.05), 12);
    const many = Array.from({ length: 100 }, (_, i) => ({ certainty: i / 100, correct: true }));
    expect(coverageAtBudget(many, 0.05)).toMatchObject({ coverage: 1, enough: true });
    // 20%: 6 kept, 1 wrong. ⌈ln 0.05 / ln 0.8⌉ = ⌈13.43⌉ = 14 kept needed, so ⌈14 / 0.6⌉ = ⌈23.3⌉ = 24
    // labeled; Clopper–Pearson one-sided 95% for 1 of 6 = 0.5818 (tables).
    const at20 = coverageAtBudget(TEN, 0.2);
    expect(at20).toMatchObject({ kept: 6, errors: 1, enough: false, keptNeeded: 14, labeledNeeded: 24 });
    expect(at20.riskUpper95).toBeCloseTo(0.5818, 4);
  });

  it('certainty per type, and a score answer is right within the tolerance', () => {
    const noul: Answer = { type: 'noul', noul: 0.3 };
    const choice: Answer = { type: 'choice', choice: 'a', probabilities: { a: 0.6, b: 0.4 }, confidence: 0.03 };
    const score: Answer = {
      type: 'score',
      score: 1.4,
      legend: { 0: 'x', 1: 'y', 2: 'z' },
      probabilities: { 0: 0.1, 1: 0.4, 2: 0.5 },
      confidence: 0.2,
    };
    expect(certainty(noul)).toBeCloseTo(0.7, 12);
    expect(certainty(choice)).toBe(0.03);
    expect(certainty(choice, 'option-probability')).toBe(0.6);
    expect(certainty(score)).toBe(0.2);
    expect(answerCorrect(noul, false, 0.5)).toBe(true);
    expect(answerCorrect(score, 1, 0.5)).toBe(true);
    expect(answerCorrect(score, 1, 0.3)).toBe(false);
    expect(answerCorrect({ ...score, score: 1.6 }, 1, 0.5)).toBe(false);
    // "within" the tolerance includes its edge.
    expect(answerCorrect({ ...score, score: 1.5 }, 1, 0.5)).toBe(true);
    expect(answerCorrect({ ...score, score: 0.75 }, 1, 0.25)).toBe(true);
  });

  it('draws the curve and marks the budget point', () => {
    const svg = riskCoverageSvg('noul', riskCoverage(TEN), [coverageAtBudget(TEN, 0.05)]);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('budget 5%');
    expect(svg).toContain('coverage 0.200 at threshold 0.925 (2 kept, 0 wrong)');
    expect(svg).toContain('>0.20 kept at ≥ 0.925</text>');
    const none = riskCoverageSvg('choice', riskCoverage(TEN), [coverageAtBudget(TEN.slice(3), 0.05)]);
    expect(none).toContain('>none kept within 5%</text>');
    expect(none).not.toContain('<circle');
  });
});

const noul = (p: number): Answer => ({ type: 'noul', noul: p });

describe('paired bootstrap', () => {
  it('a tie: the same answers in both arms give [0, 0], and nothing is worse', () => {
    const pairs = Array.from({ length: 30 }, (_, i) => ({ a: noul(i / 30), b: noul(i / 30), expected: i % 2 === 0 }));
    const d = drift(pairs, { budgets: [0.05], scoreTolerance: 0.5, resamples: 500 });
    expect(d.noul!.accuracy).toMatchObject({ diff: 0, low: 0, high: 0 });
    expect(d.noul!.coverage[0]).toMatchObject({ diff: 0, low: 0, high: 0 });
    expect(d.noul!.ece).toMatchObject({ diff: 0, low: 0, high: 0 });
    expect(worse(d)).toEqual([]);
  });

  it('every answer broken: the accuracy difference is −1 on every resample', () => {
    const pairs = Array.from({ length: 12 }, () => ({ a: noul(0.9), b: noul(0.1), expected: true }));
    const d = drift(pairs, { budgets: [0.05], scoreTolerance: 0.5, resamples: 200 });
    expect(d.noul!.accuracy).toMatchObject({ a: 1, b: 0, diff: -1, low: -1, high: -1 });
    expect(d.noul!.coverage[0]).toMatchObject({ a: 1, b: 0, low: -1, high: -1 });
    expect(worse(d)).toEqual(['noul accuracy', 'noul coverage at 5% error']);
    // A score answer's accuracy is its most probable level's, and is named so, as the table names it.
    const level = (l: number): Answer => ({
      type: 'score',
      score: l,
      legend: { 0: 'x', 1: 'y' },
      probabilities: l ? { 0: 0.1, 1: 0.9 } : { 0: 0.9, 1: 0.1 },
      confidence: 0.5,
    });
    const scores = Array.from({ length: 12 }, () => ({ a: level(1), b: level(0), expected: 1 }));
    expect(worse(drift(scores, { budgets: [0.05], scoreTolerance: 0.5, resamples: 50 }))).toEqual([
      'score exact-level accuracy',
      'score coverage at 5% error',
    ]);
  });

  it('4 of 20 broken: the resampled difference is −X/20 with X ~ Binomial(20, 0.2)', () => {
    // Quantiles of Binomial(20, 0.2): P(X ≤ 1) = 0.069 ≥ 0.025 > P(X ≤ 0) = 0.012, so the 2.5th
    // percentile is 1; P(X ≤ 8) = 0.990 ≥ 0.975 > P(X ≤ 7) = 0.968, so the 97.5th is 8. The
    // interval of the difference is then [−8/20, −1/20] = [−0.40, −0.05], up to one step of
    // resampling noise (1/20).
    const flags = Array.from({ length: 20 }, (_, i) => i < 4);
    const r = pairedBootstrap(
      20,
      (ix, arm) => ix.reduce((s, i) => s + (arm === 'b' && flags[i] ? 0 : 1), 0) / ix.length,
      4000,
      7,
    );
    // With 4000 resamples the empirical percentiles land on those values: about 128 resamples
    // (3.2%) have X ≥ 8 where the 2.5% cut needs 100, and about 46 (1.2%) have X = 0 where the 97.5%
    // cut needs 100, each several standard deviations (11 and 7) from the cut. (A 90% interval
    // would give [−0.35, −0.05].)
    expect(r.diff).toBeCloseTo(-0.2, 12);
    expect(r.low).toBeCloseTo(-0.4, 12);
    expect(r.high).toBeCloseTo(-0.05, 12);
    // Seeded: the same seed gives the same interval.
    expect(
      pairedBootstrap(
        20,
        (ix, arm) => ix.reduce((s, i) => s + (arm === 'b' && flags[i] ? 0 : 1), 0) / ix.length,
        4000,
        7,
      ),
    ).toEqual(r);
    // The mirror, 4 of 20 fixed: [+1/20, +8/20] (a 90% interval would end at +0.35).
    const fixed = pairedBootstrap(
      20,
      (ix, arm) => ix.reduce((s, i) => s + (arm === 'a' && flags[i] ? 0 : 1), 0) / ix.length,
      4000,
      7,
    );
    expect([fixed.diff, fixed.low, fixed.high].map((x) => +x.toFixed(12))).toEqual([0.2, 0.05, 0.4]);
  });

  it('seeded: the same seed gives the same interval of a continuous statistic, another seed another', () => {
    const values = Array.from({ length: 25 }, (_, i) => Math.sin(i + 1));
    const mean = (ix: number[], arm: 'a' | 'b') =>
      ix.reduce((s, i) => s + values[i]! * (arm === 'a' ? 1 : 2), 0) / ix.length;
    const once = pairedBootstrap(25, mean, 300, 3);
    expect(pairedBootstrap(25, mean, 300, 3)).toEqual(once);
    expect(pairedBootstrap(25, mean, 300, 4).low).not.toBe(once.low);
  });

  it('an interval that holds 0 is not worse: 2 answers broken and 2 fixed of 20', () => {
    // A: right on all but 18, 19; B: wrong on 0, 1, right on 18, 19. The difference is 0; a
    // resample draws each broken or fixed question about 1/10 of the time, so some resamples come
    // out below 0 and some above: the interval holds 0 inside it.
    const pairs = Array.from({ length: 20 }, (_, i) => ({
      a: noul(i >= 18 ? 0.1 : 0.9),
      b: noul(i < 2 ? 0.1 : 0.9),
      expected: true,
    }));
    const d = drift(pairs, { budgets: [0.05], scoreTolerance: 0.5, resamples: 1000 });
    expect(d.noul!.accuracy.diff).toBe(0);
    expect(d.noul!.accuracy.low).toBeLessThan(0);
    expect(d.noul!.accuracy.high).toBeGreaterThan(0);
    expect(worse(d)).toEqual([]);
  });
});
