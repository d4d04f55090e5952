// The chooser between the four evaluation paths (src/engine/execution/strategies.ts). Which path a
// request takes shows in its pass count (packing.test.ts, single-question-reuse.test.ts); this table
// pins the decision itself, case by case.
import { describe, expect, it } from 'vitest';
import { chooseStrategy, type StrategyFacts } from '../../src/engine/execution/strategies.js';

const base: StrategyFacts = {
  packs: true,
  questions: 3,
  cached: false,
  admitted: false,
  keeps: true,
  fitsOnePass: true,
};

describe('chooseStrategy', () => {
  it.each<[string, Partial<StrategyFacts>, string]>([
    ['several questions, cache on, prefix new: the prefix is stored, questions packed', {}, 'prefix-packed'],
    ['a cached prefix: its KV, then the questions packed', { cached: true }, 'prefix-packed'],
    ['one question, first sighting: prefix and question in one packed pass', { questions: 1 }, 'whole-packed'],
    [
      'one question, first sighting, too many label tokens for one pass: one plain pass',
      { questions: 1, fitsOnePass: false },
      'single',
    ],
    ['one question, second sighting: the prefix is stored', { questions: 1, admitted: true }, 'prefix-packed'],
    ['one question on a cached prefix', { questions: 1, cached: true }, 'prefix-packed'],
    ['cache off (keeps nothing): the questions ride with the prefix', { keeps: false }, 'whole-packed'],
    [
      'cache off, questions over one pass: prefix pass, then packed passes',
      { keeps: false, fitsOnePass: false },
      'prefix-packed',
    ],
    ['a graph that cannot pack: one pass per question on the prefix', { packs: false }, 'prefix-per-question'],
    ['a graph that cannot pack, one question first seen: one pass', { packs: false, questions: 1 }, 'single'],
    [
      'a graph that splits prompts (int8, fused): one question first seen still runs its prefix apart',
      { splitsPrompt: true, questions: 1 },
      'prefix-packed',
    ],
    [
      'a graph that splits prompts, too many label tokens for one pass: prefix, then packed passes',
      { splitsPrompt: true, questions: 1, fitsOnePass: false },
      'prefix-packed',
    ],
    ['a graph that splits prompts, cache off', { splitsPrompt: true, keeps: false }, 'prefix-packed'],
    [
      'a graph that splits prompts but cannot pack: one pass (every pass of it is causal)',
      { splitsPrompt: true, packs: false, questions: 1 },
      'single',
    ],
  ])('%s', (_name, facts, expected) => {
    expect(chooseStrategy({ ...base, ...facts })).toBe(expected);
  });
});
