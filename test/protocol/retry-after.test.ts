// The retry headers of every refusal, and the slots that keep refused callers from returning together.
import { describe, expect, it } from 'vitest';
import { JITTER, RetrySlots, retryHeaders } from '../../src/protocol/index.js';

describe('retryHeaders', () => {
  it('is never earlier than the expected wait and at most JITTER later; retry-after in whole seconds, at least 1', () => {
    expect(retryHeaders(250, () => 0)).toEqual({ 'retry-after': '1', 'retry-after-ms': '250' });
    expect(retryHeaders(250, () => 0.999999)).toEqual({
      'retry-after': '1',
      'retry-after-ms': String(Math.round(250 * (1 + JITTER))),
    });
    expect(retryHeaders(30_000, () => 0.5)).toEqual({ 'retry-after': '33', 'retry-after-ms': '33000' });
    expect(retryHeaders(0, () => 0)).toEqual({ 'retry-after': '1', 'retry-after-ms': '1' });
  });

  it('spreads callers told the same expected wait', () => {
    const waits = Array.from({ length: 50 }, () => Number(retryHeaders(2_000)['retry-after-ms']));
    expect(new Set(waits).size).toBeGreaterThan(40);
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(2_000);
    expect(Math.max(...waits)).toBeLessThanOrEqual(2_400);
  });
});

describe('RetrySlots', () => {
  it('gives callers refused together one slot each, spacing apart, after the expected wait', () => {
    const slots = new RetrySlots();
    expect([0, 0, 0, 0].map(() => slots.next(1_000, 200, 50))).toEqual([200, 250, 300, 350]);
    // A caller refused later gets the next free slot, counted from its own time.
    expect(slots.next(1_100, 200, 50)).toBe(300);
  });

  it('forgets slots in the past', () => {
    const slots = new RetrySlots();
    slots.next(0, 100, 50);
    expect(slots.next(10_000, 100, 50)).toBe(100);
  });
});
