import { describe, expect, it } from 'vitest';
import { buildAnswer, confidence, normalize } from '../../src/engine/execution/answers.js';
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

  it('normalize survives very small log-probabilities', () => {
    const p = normalize([-1000, -1001, -1e6]);
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
