// The raw nesting scan that sends deep bodies to the parsing worker: brackets inside strings (and
// escaped quotes) do not count, and it stops at the first container past the limit.
import { describe, expect, it } from 'vitest';
import { DeepBodyChecker, nestsDeeperThan } from '../../src/api/deep-body.js';

describe('deep bodies', () => {
  it('counts containers, not brackets inside strings', () => {
    expect(nestsDeeperThan('[[[]]]', 3)).toBe(false);
    expect(nestsDeeperThan('[[[[]]]]', 3)).toBe(true);
    expect(nestsDeeperThan('{"a": "[[[[[[", "b": [1]}', 3)).toBe(false);
    expect(nestsDeeperThan('{"a": "\\"[[[[[[", "b": [1]}', 3)).toBe(false);
    // A string ending in an escaped backslash closes at its quote: the brackets after it count.
    expect(nestsDeeperThan('["x\\\\", [[[]]]]', 3)).toBe(true);
    expect(nestsDeeperThan('["unterminated [[[[', 3)).toBe(false);
    // Content 65 deep in the state is 66 levels with the body: to the worker (which refuses it).
    expect(nestsDeeperThan(`{"state": ${'['.repeat(65)}${']'.repeat(65)}}`)).toBe(true);
    expect(nestsDeeperThan(`{"state": ${'['.repeat(64)}${']'.repeat(64)}}`)).toBe(false);
  });

  it('the worker answers with the 422 entry of a too-deep body, "fine" for a deep valid one, and flags broken JSON', async () => {
    const checker = new DeepBodyChecker();
    try {
      const deep = await checker.check(`{"state": ${'['.repeat(70)}"x"${']'.repeat(70)}, "model": "m", "questions": {}}`);
      expect('detail' in deep && deep.detail[0]?.type).toBe('json_too_deep');
      const fine = await checker.check(`{"questions": {"q": {"instructions": ${'['.repeat(64)}"x"${']'.repeat(64)}}}}`);
      expect(fine).toEqual({ id: expect.any(Number), detail: [] });
      expect(await checker.check(`${'['.repeat(100)}`)).toMatchObject({ invalidJson: true });
    } finally {
      await checker.close();
    }
  });
});
