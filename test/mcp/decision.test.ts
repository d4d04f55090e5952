// act | review | abstain from an answer's certainty and per-type thresholds (src/mcp/decision.ts).
import { describe, expect, it } from 'vitest';
import { decide } from '../../src/mcp/index.js';
import type { Answer } from '../../src/protocol/index.js';

const noul = (p: number): Answer => ({ type: 'noul', noul: p });
const choice = (confidence: number): Answer => ({
  type: 'choice',
  choice: 'a',
  probabilities: { a: 0.6, b: 0.4 },
  confidence,
});

describe('decide', () => {
  const t = { act: { noul: 0.9, choice: 0.5 }, review: { noul: 0.7 } };

  it('acts at or above act, reviews at or above review, abstains below; certainty is max(p, 1 − p) for noul', () => {
    expect(decide(noul(0.95), t)).toEqual({
      decision: 'act',
      certainty: 0.95,
      act_threshold: 0.9,
      review_threshold: 0.7,
    });
    expect(decide(noul(0.1), t)?.decision).toBe('act'); // a confident no is acted on too
    expect(decide(noul(0.9), t)?.decision).toBe('act'); // at the threshold: kept, as the coverage report counts it
    expect(decide(noul(0.75), t)?.decision).toBe('review');
    expect(decide(noul(0.7), t)?.decision).toBe('review');
    expect(decide(noul(0.6), t)).toEqual({
      decision: 'abstain',
      certainty: 0.6,
      act_threshold: 0.9,
      review_threshold: 0.7,
    });
  });

  it('without a review threshold, below act is review (never abstain); without an act threshold, no decision', () => {
    expect(decide(choice(0.2), t)).toEqual({ decision: 'review', certainty: 0.2, act_threshold: 0.5 });
    expect(decide(choice(0.5), t)?.decision).toBe('act');
    const score: Answer = {
      type: 'score',
      score: 1,
      legend: { '0': 'a', '1': 'b' },
      probabilities: { '0': 0, '1': 1 },
      confidence: 1,
    };
    expect(decide(score, t)).toBeUndefined();
    expect(decide(noul(0.99), undefined)).toBeUndefined();
  });
});
