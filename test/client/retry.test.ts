// The retry policy's pure parts: which statuses, which wait.
import { describe, expect, it } from 'vitest';
import { backoffDelayMs, isRetryableStatus, serverRetryDelayMs } from '../../src/client/index.js';

describe('retry policy', () => {
  it('retries 408, 429, 5xx and 529, nothing else', () => {
    const retried = [400, 401, 403, 404, 408, 413, 415, 422, 429, 500, 502, 503, 529].filter(isRetryableStatus);
    expect(retried).toEqual([408, 429, 500, 502, 503, 529]);
  });

  it('prefers retry-after-ms, then retry-after seconds, then an HTTP date', () => {
    expect(serverRetryDelayMs(new Headers({ 'retry-after-ms': '1234', 'retry-after': '9' }))).toBe(1234);
    expect(serverRetryDelayMs(new Headers({ 'retry-after-ms': 'soon', 'retry-after': '2' }))).toBe(2000);
    expect(serverRetryDelayMs(new Headers({ 'retry-after': '0.5' }))).toBe(500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(serverRetryDelayMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:03 GMT' }), now)).toBe(3000);
    expect(serverRetryDelayMs(new Headers({ 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' }), now)).toBe(0);
    expect(serverRetryDelayMs(new Headers({ 'retry-after-ms': '-5' }))).toBeUndefined();
    expect(serverRetryDelayMs(new Headers())).toBeUndefined();
  });

  it('backs off exponentially with full jitter under a cap', () => {
    expect([0, 1, 2, 3, 10].map((n) => backoffDelayMs(n, 500, 8000, () => 0.999999))).toEqual([
      499, 999, 1999, 3999, 7999,
    ]);
    expect(backoffDelayMs(3, 500, 8000, () => 0)).toBe(0);
    expect(backoffDelayMs(2, 500, 8000, () => 0.5)).toBe(1000);
  });
});
