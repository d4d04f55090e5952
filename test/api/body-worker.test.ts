// The body worker: the raw nesting scan that sends deep bodies to it (brackets inside strings, and
// escaped quotes, do not count; it stops at the first container past the limit), and the worker's
// verdicts: 422 entries, or a valid body's facts with its bytes handed back.
import { describe, expect, it } from 'vitest';
import { BodyWorker, nestsDeeperThan } from '../../src/api/body-worker.js';

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

  it('the worker answers with the 422 entries of a bad body, or the facts of a valid one and its bytes', async () => {
    const worker = new BodyWorker();
    const bytes = (text: string) => new TextEncoder().encode(text);
    try {
      const deep = await worker.check(
        bytes(`{"state": ${'['.repeat(70)}"x"${']'.repeat(70)}, "model": "m", "questions": {}}`),
      );
      expect('detail' in deep.verdict && deep.verdict.detail[0]?.type).toBe('json_too_deep');
      expect(deep.bytes).toBeUndefined();
      const broken = await worker.check(bytes(`${'['.repeat(100)}`));
      expect('detail' in broken.verdict && broken.verdict.detail[0]).toMatchObject({
        type: 'json_invalid',
        loc: ['body', 100],
      });
      const text = JSON.stringify({
        state: 'x'.repeat(100_000),
        model: 'svc-latest',
        questions: { a: { type: 'noul' }, b: { type: 'noul' } },
      });
      const sent = bytes(text);
      const valid = await worker.check(sent);
      expect(valid.verdict).toEqual({ model: 'svc-latest', questionCount: 2, order: [{ id: 'a' }, { id: 'b' }] });
      expect(sent.byteLength).toBe(0); // transferred, not copied
      expect(new TextDecoder().decode(valid.bytes)).toBe(text);
    } finally {
      await worker.close();
    }
  });
});

describe('/mcp messages in the body worker', () => {
  it("makes and checks a tool call's request there: the loop gets the call without its arguments", async () => {
    const worker = new BodyWorker();
    const bytes = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));
    const call = (name: string, args: unknown) => ({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name, arguments: args },
    });
    try {
      const state = 'x'.repeat(200_000);
      const asked = await worker.checkMcp(
        bytes(call('classify', { state, instructions: 'q', criteria: ['3', '1'] })),
        'm-default',
      );
      expect(asked).toMatchObject({ message: call('classify', {}), prepared: { name: 'classify' } });
      const prepared = (asked as { prepared: { verdict: unknown; bytes: Uint8Array } }).prepared;
      // The request the tool would send, its options in the order listed, checked as /v1/systemone checks it.
      expect(prepared.verdict).toEqual({
        model: 'm-default',
        questionCount: 1,
        order: [{ id: 'q', options: ['3', '1'] }],
      });
      expect(JSON.parse(new TextDecoder().decode(prepared.bytes))).toMatchObject({ model: 'm-default', state });
      // Its refusals: the request's 422 entries, or the tool's input schema's message.
      const empty = await worker.checkMcp(
        bytes(call('classify', { state: 'x', instructions: 'q', criteria: {} })),
        'm',
      );
      expect((empty as any).prepared.verdict.detail[0]).toMatchObject({ type: 'too_short' });
      const typed = await worker.checkMcp(bytes(call('check', { state: 5, instructions: 'q' })), 'm');
      expect((typed as any).prepared.invalid).toMatch(/^Input validation error: Invalid arguments for tool check: /);
      // Any other message comes back whole, or without its params when they are too large to hand back.
      const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { capabilities: {} } };
      expect(await worker.checkMcp(bytes(init), 'm')).toEqual({ message: init });
      const junk = { jsonrpc: '2.0', id: 2, method: 'ping', params: { a: Array.from({ length: 20_000 }, () => []) } };
      expect(await worker.checkMcp(bytes(junk), 'm')).toEqual({ message: { jsonrpc: '2.0', id: 2, method: 'ping' } });
      expect(await worker.checkMcp(bytes('{"jsonrpc": '), 'm')).toMatchObject({ notJson: [{ type: 'json_invalid' }] });
    } finally {
      await worker.close();
    }
  });
});
