// Rendering is JSON.stringify(value, null, 2) exactly, without recursion, and bounded; long runs are
// cut before BPE without changing the tokens of ordinary text.
import { describe, expect, it } from 'vitest';
import { ContentTooLarge, renderContent } from '../../src/engine/prompting/content.js';
import { splitLongRuns, TextCodec } from '../../src/engine/prompting/tokenizer.js';
import { tinyFp32 } from './fixtures.js';

describe('renderContent', () => {
  it('renders exactly as JSON.stringify(value, null, 2)', () => {
    const values: Array<object> = [
      {},
      [],
      [[]],
      { a: {} },
      { b: 1, a: [1, 'two', null, true, false, -0, 1e21, 1.5e-7, { c: [] }], '2': 'x', '1': 'y' },
      ['Ünïcode 日本語 🦊', 'quote " backslash \\ newline \n tab \t \u0001 \u2028', { '': '', 'k"ey': 'v' }],
      { nested: { deeper: { deepest: [[[['x']]]] } }, after: 3 },
      { skipped: undefined, kept: 1 },
    ];
    for (const v of values) expect(renderContent(v as Record<string, unknown>)).toBe(JSON.stringify(v, null, 2));
  });

  it('renders any depth without recursion, and stops past a length', () => {
    let deep: unknown[] = ['x'];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(() => JSON.stringify(deep, null, 2)).toThrow(RangeError);
    expect(() => renderContent(deep, 1_000_000)).toThrow(ContentTooLarge);
    expect(renderContent([[['x']]], 1_000)).toBe(JSON.stringify([[['x']]], null, 2));
  });
});

describe('long runs before BPE', () => {
  it('cuts only stretches of 128+ characters of whitespace or non-whitespace, every 128', () => {
    expect(splitLongRuns('ordinary text, with words and 1234 digits.')).toEqual([
      'ordinary text, with words and 1234 digits.',
    ]);
    const pieces = splitLongRuns(`a${' '.repeat(600)}b`);
    expect(pieces.join('')).toBe(`a${' '.repeat(600)}b`);
    expect(pieces.map((p) => p.length)).toEqual([129, 128, 128, 128, 89]);
    expect(splitLongRuns('🦊'.repeat(300)).join('')).toBe('🦊'.repeat(300));
  });

  it('leaves the tokens of ordinary text unchanged, and a 300,000-space run decodes back to itself', async () => {
    const codec = await TextCodec.load(await tinyFp32());
    const prose = Array.from(
      { length: 300 },
      (_, i) => `Sentence ${i}: the quick brown fox — «日本語» {"k": [${i}]}\n\n`,
    ).join('');
    expect(codec.encode(prose)).toEqual(codec.encodeWhole(prose));
    // 300,000 spaces: tokens cover the whole text when decoded.
    const spaces = `x${' '.repeat(300_000)}y`;
    expect(codec.decode(codec.encode(spaces))).toBe(spaces);
  });
});
