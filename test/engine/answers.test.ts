import { describe, expect, it } from 'vitest';
import {
  answerQuestions,
  buildAnswer,
  confidence,
  hostedChoiceConfidence,
  hostedScoreConfidence,
} from '../../src/engine/execution/answers.js';
import { softmax } from '../../src/common/index.js';
import { logSoftmaxAt } from '../../src/engine/model/runner.js';

describe('distributions and confidence', () => {
  it('confidence is 1 on a certain outcome or a single outcome, 0 when uniform', () => {
    expect(confidence([1, 0, 0])).toBe(1);
    expect(confidence([1])).toBe(1);
    expect(confidence([0.25, 0.25, 0.25, 0.25])).toBeCloseTo(0, 12);
    expect(confidence([0.5, 0.5])).toBeCloseTo(0, 12);
    const mid = confidence([0.7, 0.2, 0.1]);
    expect(mid).toBeGreaterThan(0);
    expect(mid).toBeLessThan(1);
    // 1 − H/ln N
    const h = -(0.7 * Math.log(0.7) + 0.2 * Math.log(0.2) + 0.1 * Math.log(0.1));
    expect(mid).toBeCloseTo(1 - h / Math.log(3), 12);
  });

  it('p = 0.9 / 0.05 / 0.05 by hand: entropy 0.6410, hosted choice 0.85, hosted score 0.775', () => {
    const p = [0.9, 0.05, 0.05];
    // H = −(0.9 ln 0.9 + 2 · 0.05 ln 0.05) = 0.094825 + 0.299573 = 0.394398 nats; 1 − H / ln 3 = 1 − 0.358996
    expect(confidence(p)).toBeCloseTo(0.641004, 5);
    // (0.9 − 1/3) / (1 − 1/3) = 0.5667 / 0.6667
    expect(hostedChoiceConfidence(p)).toBeCloseTo(0.85, 12);
    // mode 0; Σ pᵢ·|i − 0| = 0.05 + 0.10 = 0.15; MAD = (1 + 0 + 1) / 3 = 2/3; 1 − 0.15 / (2/3) = 0.775
    expect(hostedScoreConfidence(p)).toBeCloseTo(0.775, 12);
  });

  it('hosted formulas: normalized first, 1 for one outcome, 0 when uniform, the first level on ties, never below 0', () => {
    expect(hostedChoiceConfidence([1.8, 0.1, 0.1])).toBeCloseTo(0.85, 12); // scaled to 0.9 / 0.05 / 0.05
    expect(hostedChoiceConfidence([0, 0, 0])).toBe(0); // uniform when they sum to 0
    expect(hostedChoiceConfidence([0.7])).toBe(1);
    expect(hostedScoreConfidence([0.3])).toBe(1);
    expect(hostedChoiceConfidence([0.25, 0.25, 0.25, 0.25])).toBeCloseTo(0, 12);
    // 4 levels, MAD = (1.5 + 0.5 + 0.5 + 1.5) / 4 = 1; mass split over the two ends: mode 0, distance 0.5 · 3 = 1.5 → 0
    expect(hostedScoreConfidence([0.5, 0, 0, 0.5])).toBe(0);
    // ties go to the first level: mode 1 of [0.1, 0.4, 0.4, 0.1]; distance 0.1 + 0.4 + 0.2 = 0.7; MAD 1 → 0.3
    expect(hostedScoreConfidence([0.1, 0.4, 0.4, 0.1])).toBeCloseTo(0.3, 12);
    // 2 levels: MAD = 0.5; [0.8, 0.2]: distance 0.2 → 0.6, as the choice formula gives
    expect(hostedScoreConfidence([0.8, 0.2])).toBeCloseTo(0.6, 12);
    expect(hostedChoiceConfidence([0.8, 0.2])).toBeCloseTo(0.6, 12);
  });

  it('answers carry the confidence of the formula asked for (entropy by default)', () => {
    const asked = [
      { key: 'c', question: { type: 'choice' as const, criteria: { a: null, b: null, c: null } } },
      { key: 's', question: { type: 'score' as const, criteria: ['x', 'y', 'z'] } },
    ];
    const logps = [[0.9, 0.05, 0.05].map(Math.log), [0.9, 0.05, 0.05].map(Math.log)];
    const entropy = answerQuestions(asked, logps);
    const hosted = answerQuestions(asked, logps, {}, 'hosted');
    const conf = (a: Record<string, unknown>, k: string) => (a[k] as { confidence: number }).confidence;
    expect(conf(entropy, 'c')).toBeCloseTo(0.641004, 5);
    expect(conf(entropy, 's')).toBeCloseTo(0.641004, 5);
    expect(conf(hosted, 'c')).toBeCloseTo(0.85, 9);
    expect(conf(hosted, 's')).toBeCloseTo(0.775, 9);
    expect(buildAnswer({ type: 'choice', criteria: { only: null } }, [1], 'hosted')).toEqual({
      type: 'choice',
      choice: 'only',
      probabilities: { only: 1 },
      confidence: 1,
    });
  });

  it('softmax survives very small log-probabilities', () => {
    const p = softmax([-1000, -1001, -1e6]);
    expect(p[0]! + p[1]! + p[2]!).toBeCloseTo(1, 12);
    expect(p[2]).toBe(0);
    expect(p[0]! / p[1]!).toBeCloseTo(Math.E, 9);
  });

  it('score is the expectation over levels and its probabilities are keyed "0".."n-1"', () => {
    const a = buildAnswer({ type: 'score', criteria: ['a', 'b', 'c', 'd'] }, [0.1, 0.2, 0.3, 0.4]);
    if (a.type !== 'score') throw new Error('type');
    expect(a.score).toBeCloseTo(0.2 + 0.6 + 1.2, 12);
    expect(Object.keys(a.probabilities)).toEqual(['0', '1', '2', '3']);
    expect(a.legend).toEqual({ '0': 'a', '1': 'b', '2': 'c', '3': 'd' });
  });

  it('choice picks the most probable option; ties go to the first option', () => {
    const a = buildAnswer({ type: 'choice', criteria: { x: null, y: null, z: null } }, [0.4, 0.4, 0.2]);
    if (a.type !== 'choice') throw new Error('type');
    expect(a.choice).toBe('x');
  });

  it('log-softmax with temperature matches the definition', () => {
    const logits = Float32Array.from([1, 2, 3]);
    const t = 2;
    const z = Math.log(Math.exp(0.5) + Math.exp(1) + Math.exp(1.5));
    expect(logSoftmaxAt(logits, t)(2)).toBeCloseTo(1.5 - z, 6);
  });
});
