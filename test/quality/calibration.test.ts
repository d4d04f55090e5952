// Temperature fitting and run comparison on small fixed inputs, checked against hand-computed values.
import { describe, expect, it } from 'vitest';
import { fitTemperature, meanLogLoss, split, withTemperature } from '../../src/quality/calibration.js';
import { countFlips, decision } from '../../src/quality/compare.js';
import type { Answer } from '../../src/protocol/schemas.js';

describe('temperature fitting', () => {
  it('softens and sharpens as softmax(ln p / T)', () => {
    // [0.8, 0.2] at T = 2: [√0.8, √0.2] normalized = [2/3, 1/3].
    const [a, b] = withTemperature([0.8, 0.2], 2);
    expect(a).toBeCloseTo(2 / 3, 12);
    expect(b).toBeCloseTo(1 / 3, 12);
    expect(withTemperature([0.8, 0.2], 0.5)[0]).toBeCloseTo(0.64 / 0.68, 12);
    const [one, zero] = withTemperature([1, 0], 3); // an underflowed outcome stays finite and (nearly) 0
    expect(one).toBe(1);
    expect(zero).toBeLessThan(1e-99);
  });

  it('finds the log-loss minimum: labels at the model’s own rate need no change; a too-confident model is softened', () => {
    // P(yes) = 0.9, labeled yes 9 times in 10: calibrated, T = 1.
    const calibrated = [...Array(9).fill({ probs: [0.9, 0.1], expected: 0 }), { probs: [0.9, 0.1], expected: 1 }];
    expect(fitTemperature(calibrated)).toBeCloseTo(1, 4);
    // Labeled yes only 3 times in 4: the T with softmax(ln 0.9/T, ln 0.1/T) = 0.75 is ln 9 / ln 3 = 2.
    const overconfident = [...Array(3).fill({ probs: [0.9, 0.1], expected: 0 }), { probs: [0.9, 0.1], expected: 1 }];
    expect(fitTemperature(overconfident)).toBeCloseTo(2, 4);
    expect(meanLogLoss(overconfident, 2)).toBeCloseTo(-(0.75 * Math.log(0.75) + 0.25 * Math.log(0.25)), 10);
    expect(fitTemperature([])).toBe(1);
  });

  it('splits by a seeded shuffle: the same seed the same split, every item once', () => {
    const a = split(10, 0.3, 1);
    expect(a.heldOut).toHaveLength(3);
    expect([...a.train, ...a.heldOut].sort((x, y) => x - y)).toEqual([...Array(10).keys()]);
    expect(split(10, 0.3, 1)).toEqual(a);
    expect(split(10, 0.3, 2)).not.toEqual(a);
    expect(split(2, 0.01, 1).heldOut).toHaveLength(1);
  });
});

describe('comparing two runs', () => {
  const noul = (p: number): Answer => ({ type: 'noul', noul: p });
  const choice = (probabilities: Record<string, number>): Answer => ({
    type: 'choice',
    choice: Object.entries(probabilities).sort((x, y) => y[1] - x[1])[0]![0],
    probabilities,
    confidence: 0,
  });
  const score = (probabilities: Record<string, number>): Answer => ({
    type: 'score',
    score: 0,
    legend: {},
    probabilities,
    confidence: 0,
  });

  it('counts flipped decisions, and which were fixed or broken against the labels', () => {
    expect(decision(noul(0.5))).toBe(true);
    expect(decision(score({ '0': 0.2, '1': 0.5, '2': 0.3 }))).toBe(1);
    const flips = countFlips([
      { a: noul(0.9), b: noul(0.4), expected: true }, // flipped, broken
      { a: noul(0.3), b: noul(0.6), expected: true }, // flipped, fixed
      { a: noul(0.7), b: noul(0.8), expected: false }, // same
      { a: choice({ x: 0.6, y: 0.4 }), b: choice({ x: 0.3, y: 0.7 }), expected: 'z' }, // flipped, neither
      { a: score({ '0': 0.6, '1': 0.4 }), b: score({ '0': 0.55, '1': 0.45 }), expected: 0 },
    ]);
    expect(flips.noul).toEqual({
      count: 3,
      flipped: 2,
      fixed: 1,
      broken: 1,
      meanMaxDelta: expect.closeTo((0.5 + 0.3 + 0.1) / 3, 12) as number,
    });
    expect(flips.choice).toMatchObject({
      count: 1,
      flipped: 1,
      fixed: 0,
      broken: 0,
      meanMaxDelta: expect.closeTo(0.3, 12) as number,
    });
    expect(flips.score).toMatchObject({ count: 1, flipped: 0, meanMaxDelta: expect.closeTo(0.05, 12) as number });
  });
});
