// The Laya layout (`laya-markers`) against goldens made by an independent reference: the authors'
// rules written in Python (tools/families/laya/laya_layout.py), never from this TypeScript. Rows,
// marker positions, qtype, what was cut and the refusals must be identical; the calibrated readout
// of fake logits agrees within 1e-6 (below). docs/families/laya-markers.md.
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { layaReadout, readLayaConfig } from '../../src/engine/families/laya/calibration.js';
import {
  LAYA_RULES,
  layaLayout,
  LayaOptionsTooLong,
  type LayaQuestion,
  type LayaRow,
  type LayaRules,
} from '../../src/engine/families/laya/layout.js';
import { layaTokenizer } from '../../src/engine/families/laya/tokenizer.js';
import {
  goldenRequests,
  LAYA_GOLDENS,
  referenceTokenizer,
  runReference,
  type GoldenRequest,
} from '../../tools/families/laya/goldens.js';
import { layaTestTokenizer } from '../../tools/families/laya/tokenizer.js';
import * as golden from './golden-helpers.js';

const goldens = golden.readGoldens<golden.Goldens<GoldenRequest> & { configs: Record<string, unknown> }>(LAYA_GOLDENS);
const { tokenizer: tokenizerJson, config: tokenizerConfig } = layaTestTokenizer();
const tok = layaTokenizer(new Tokenizer(tokenizerJson as object, tokenizerConfig), tokenizerConfig);

const question = (r: GoldenRequest) => golden.layoutQuestion<LayaQuestion>(r);

/** The layout's answer in the goldens' shape: the row, or the refusal's facts. */
function layout(r: GoldenRequest, rules: LayaRules = LAYA_RULES): Record<string, unknown> {
  const limits = readLayaConfig(goldens.configs[r.config]);
  try {
    const row: LayaRow = layaLayout(question(r), r.state as any, tok, limits, rules);
    return { ...row };
  } catch (error) {
    if (!(error instanceof LayaOptionsTooLong)) throw error;
    const { options, optionsKept, count, limit, headMaxLen } = error;
    return { refused: { options, optionsKept, count, limit, headMaxLen } };
  }
}

const expected = (i: number) => golden.layoutResult(goldens, i);
const cases = golden.goldenCases(goldens);

describe('the goldens', () => {
  it('hold at least 100 requests, covering the cases issue 37 names', () => {
    expect(goldens.requests.length).toBeGreaterThanOrEqual(100);
    const names = goldens.requests.map((r) => r.name).join('\n');
    for (const needed of [
      ...golden.ISSUE_37_CASES,
      'noul both criteria',
      '[MASK] in state',
      '[SEP] [CLS] [PAD] [UNK] in state',
      'state at the limit',
      'state one over the limit',
      'long instructions',
      'choice long options',
    ])
      expect(names).toContain(needed);
    const results = goldens.results;
    expect(results.filter((r) => r.refused).length).toBeGreaterThanOrEqual(3);
    expect(results.filter((r) => r.truncated?.state).length).toBeGreaterThanOrEqual(10);
    expect(results.filter((r) => r.truncated?.row).length).toBeGreaterThanOrEqual(2);
  });
});

describe('the TypeScript layout equals the reference', () => {
  it.each(cases)('%s', (_name, i) => {
    expect(layout(goldens.requests[i]!)).toEqual(expected(i));
  });

  it('refuses with a BudgetError (422) that names the limit', () => {
    const r = goldens.requests.find((x) => x.name === 'choice 255 options')!;
    const limits = readLayaConfig(goldens.configs[r.config]);
    const thrown = golden.thrownBy(() => layaLayout(question(r), r.state as any, tok, limits));
    expect(thrown).toBeInstanceOf(LayaOptionsTooLong);
    expect(thrown).toBeInstanceOf(BudgetError);
    expect((thrown as BudgetError).message).toContain('at most 512 tokens');
    expect((thrown as BudgetError).message).toContain('126 of the question');
    expect(thrown).toMatchObject({ options: 255, optionsKept: 126, count: 1032, limit: 512, headMaxLen: 192 });
    golden.expectCrossesAsBudgetError(thrown);
  });
});

describe('a changed rule changes rows of some golden request (the goldens notice)', () => {
  const changes: Array<[string, Partial<LayaRules>]> = [
    ['options cut at 40 tokens, not 48', { optionTokens: 40 }],
    ['instructions keep 9 tokens, not 8', { minInstructionTokens: 9 }],
    ['even cut below 15 tokens of room, not 16', { minHeadRoom: 15 }],
    ['an evenly cut option keeps 5 tokens, not 4', { minPerOption: 5 }],
    ['only [MASK] neutralised (the authors’ rule, without the deviation)', { neutraliseAllSpecials: false }],
  ];
  golden.itNoticesRuleChanges(goldens, changes, (r, change) => layout(r, { ...LAYA_RULES, ...change }));

  it('a list state cut at its start instead of its end', () => {
    const i = goldens.requests.findIndex((r) => r.name === 'list state over the limit keeps its end (laya-en)');
    const r = goldens.requests[i]!;
    // The same text as a string state: the layout keeps its start.
    const asString = { ...r, state: `[${(r.state as string[]).map((s) => JSON.stringify(s)).join(', ')}]` };
    const row = layout(asString) as any;
    expect(row.truncated.state.keep).toBe('start');
    expect(row.ids).not.toEqual(expected(i).ids);
  });
});

// Probabilities: the reference computes in Python floats and Assay in JavaScript numbers, both
// IEEE float64, from the same logits and temperatures; they differ only in exp() and summation
// order, ~1e-15. 1e-6 is far above that and far below what any rule difference moves (a wrong
// bucket or an unclamped temperature moves probabilities by > 1e-3 on these logits). The authors'
// numpy path divides float32 logits in float32 (~1e-7 relative) and rounds answers to 4 places.
describe('the readout equals the reference', () => {
  const read = golden.readoutCases(goldens);
  it('covers most requests and every bucket the configs name', () => {
    expect(read.length).toBeGreaterThanOrEqual(100);
    const buckets = new Set(read.map(([, i]) => goldens.results[i]!.readout.bucket));
    for (const b of [
      'choice:2',
      'choice:3-5',
      'choice:6-10',
      'choice:11+',
      'score:2',
      'score:3-5',
      'score:6-10',
      'noul:2',
    ])
      expect(buckets).toContain(b);
  });

  golden.itEachReadout(goldens, (r, want) => {
    const { calibration } = readLayaConfig(goldens.configs[r.config]);
    const got = layaReadout(r.question.type, r.logits!, calibration);
    expect(got.bucket).toBe(want.bucket);
    expect(got.temperature).toBe(want.temperature);
    expect(got.best).toBe(want.best);
    golden.expectReadoutWithin(got, want, 1e-6);
  });

  it('clamps shipped temperatures to [0.5, 5] and names what it clamped', () => {
    const { calibration } = readLayaConfig(goldens.configs['laya-en']);
    expect(calibration.byOptions.get('choice:11+')).toBe(0.5);
    expect(calibration.byOptions.get('score:3-5')).toBe(5);
    expect(calibration.clamped).toEqual(['choice:11+=0.1006 -> 0.5', 'score:3-5=6.5 -> 5']);
    const typed = readLayaConfig(goldens.configs['laya-typed']);
    expect(typed.calibration.temperature).toEqual([1.1, 1.7, 1]);
    expect(typed.maxLen).toBe(1024);
  });
});

golden.describeLiveReference('Laya', goldens, () => {
  const ref = referenceTokenizer();
  return { requests: () => goldenRequests(ref), run: (picked) => runReference(picked, ref) };
});
