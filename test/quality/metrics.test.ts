// The quality metrics against values computed by hand on small fixed inputs.
import { describe, expect, it } from 'vitest';
import { choiceMetrics, noulMetrics, reliability, scoreMetrics } from '../../src/quality/metrics.js';

describe('quality metrics', () => {
  it('noul: accuracy, Brier, log loss and ECE by hand', () => {
    const m = noulMetrics(
      [
        { p: 0.9, expected: true }, // right, conf 0.9
        { p: 0.2, expected: false }, // right, conf 0.8
        { p: 0.6, expected: false }, // wrong, conf 0.6
        { p: 0.4, expected: true }, // wrong, conf 0.6
      ],
      2,
    );
    expect(m.accuracy).toBe(0.5);
    // Brier: (0.1² + 0.2² + 0.6² + 0.6²) / 4 = (0.01 + 0.04 + 0.36 + 0.36) / 4 = 0.1925
    expect(m.brier).toBeCloseTo(0.1925, 12);
    // log loss: −(ln 0.9 + ln 0.8 + ln 0.4 + ln 0.4) / 4
    expect(m.logLoss).toBeCloseTo(-(Math.log(0.9) + Math.log(0.8) + 2 * Math.log(0.4)) / 4, 12);
    // Two equal-mass bins by confidence: {0.6 wrong, 0.6 wrong} → |0 − 0.6|; {0.8, 0.9 right} → |1 − 0.85|.
    expect(m.ece).toBeCloseTo(0.5 * 0.6 + 0.5 * 0.15, 12);
    expect(m.reliability).toEqual([
      { confidence: 0.6, accuracy: 0, count: 2 },
      { confidence: expect.closeTo(0.85, 12), accuracy: 1, count: 2 },
    ]);
  });

  it('choice: top-label accuracy, multi-class Brier, log loss of the labeled option', () => {
    const m = choiceMetrics(
      [
        { probabilities: { a: 0.7, b: 0.2, c: 0.1 }, expected: 'a' },
        { probabilities: { a: 0.5, b: 0.5, c: 0 }, expected: 'b' }, // tie → a (first listed): wrong
      ],
      1,
    );
    expect(m.accuracy).toBe(0.5);
    // Brier: [(0.3² + 0.2² + 0.1²) + (0.5² + 0.5² + 0)] / 2 = (0.14 + 0.5) / 2 = 0.32
    expect(m.brier).toBeCloseTo(0.32, 12);
    expect(m.logLoss).toBeCloseTo(-(Math.log(0.7) + Math.log(0.5)) / 2, 12);
    // One bin: mean confidence (0.7 + 0.5) / 2 = 0.6, accuracy 0.5 → ECE 0.1
    expect(m.ece).toBeCloseTo(0.1, 12);
  });

  it('score: MAE of the expected score and exact-level accuracy', () => {
    const m = scoreMetrics([
      { probabilities: { '0': 0.2, '1': 0.5, '2': 0.3 }, expected: 1 }, // E = 1.1, argmax 1
      { probabilities: { '0': 0.6, '1': 0.4 }, expected: 1 }, // E = 0.4, argmax 0
    ]);
    expect(m.mae).toBeCloseTo((0.1 + 0.6) / 2, 12);
    expect(m.exactAccuracy).toBe(0.5);
  });

  it('equal-mass bins: 15 by default, sizes differ by at most one; a perfectly calibrated set has ECE 0', () => {
    const points = Array.from({ length: 47 }, (_, i) => ({ confidence: 0.5 + i / 100, correct: i % 2 === 0 }));
    const r = reliability(points);
    expect(r.bins).toHaveLength(15);
    const sizes = r.bins.map((b) => b.count);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(47);
    expect(
      reliability([
        { confidence: 1, correct: true },
        { confidence: 0, correct: false },
      ]).ece,
    ).toBe(0);
    expect(noulMetrics([{ p: 0, expected: true }]).logLoss).toBeCloseTo(-Math.log(1e-12), 6); // clipped, finite
  });
});
