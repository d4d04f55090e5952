// The Laya layout (`laya-markers`) against goldens made by an independent reference: the authors'
// rules written in Python (tools/reference/laya_layout.py), never from this TypeScript. Rows,
// marker positions, qtype, what was cut and the refusals must be identical; the calibrated readout
// of fake logits agrees within 1e-6 (below). docs/families/laya-markers.md.
import { existsSync, readFileSync } from 'node:fs';
import { Tokenizer } from '@huggingface/tokenizers';
import { failureOf, rebuild } from '../../src/engine/thread/failure.js';
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
  PYTHON,
  referenceTokenizer,
  runReference,
  type GoldenRequest,
} from '../../tools/families/laya-goldens.js';
import { layaTestTokenizer } from '../../tools/families/laya-tokenizer.js';

interface Golden {
  configs: Record<string, unknown>;
  requests: GoldenRequest[];
  results: Array<Record<string, any>>;
}
const goldens = JSON.parse(readFileSync(LAYA_GOLDENS, 'utf8')) as Golden;
const { tokenizer: tokenizerJson, config: tokenizerConfig } = layaTestTokenizer();
const tok = layaTokenizer(new Tokenizer(tokenizerJson as object, tokenizerConfig), tokenizerConfig);

/** A golden request's question as the layout takes it (choice criteria are [name, description] pairs). */
function question(r: GoldenRequest): LayaQuestion {
  const q = r.question as any;
  return q.type === 'choice' ? { type: 'choice', instructions: q.instructions, options: q.criteria } : q;
}

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

function expected(i: number): Record<string, unknown> {
  const { name: _name, readout: _readout, ...rest } = goldens.results[i]!;
  return rest;
}

const cases = goldens.requests.map((r, i) => [r.name, i] as const);

describe('the goldens', () => {
  it('hold at least 100 requests, covering the cases issue 37 names', () => {
    expect(goldens.requests.length).toBeGreaterThanOrEqual(100);
    const names = goldens.requests.map((r) => r.name).join('\n');
    for (const needed of [
      'choice one option',
      'choice 10 options',
      'choice 26 options',
      'choice 255 options',
      'score 2 levels',
      'score 10 levels',
      'noul plain',
      'noul both criteria',
      'object state',
      'array state',
      'noul criteria object',
      '[MASK] in state',
      '[SEP] [CLS] [PAD] [UNK] in state',
      'CJK state',
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
    let thrown: unknown;
    try {
      layaLayout(question(r), r.state as any, tok, limits);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LayaOptionsTooLong);
    expect(thrown).toBeInstanceOf(BudgetError);
    expect((thrown as BudgetError).message).toContain('at most 512 tokens');
    expect((thrown as BudgetError).message).toContain('126 of the question');
    expect(thrown).toMatchObject({ options: 255, optionsKept: 126, count: 1032, limit: 512, headMaxLen: 192 });
    // It crosses threads (planner, engine thread) as a BudgetError with its message: the API's 422.
    const crossed = rebuild(failureOf(thrown));
    expect(crossed).toBeInstanceOf(BudgetError);
    expect(crossed.message).toBe((thrown as Error).message);
    expect((crossed as BudgetError).budget).toBe('context');
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
  it.each(changes)('%s', (_name, change) => {
    const differ = cases.filter(
      ([, i]) =>
        JSON.stringify(layout(goldens.requests[i]!, { ...LAYA_RULES, ...change })) !== JSON.stringify(expected(i)),
    );
    expect(differ.length).toBeGreaterThan(0);
  });

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
  const read = cases.filter(([, i]) => goldens.results[i]!.readout);
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

  it.each(read)('%s', (_name, i) => {
    const r = goldens.requests[i]!;
    const want = goldens.results[i]!.readout;
    const { calibration } = readLayaConfig(goldens.configs[r.config]);
    const got = layaReadout(r.question.type, r.logits!, calibration);
    expect(got.bucket).toBe(want.bucket);
    expect(got.temperature).toBe(want.temperature);
    expect(got.best).toBe(want.best);
    expect(got.probabilities).toHaveLength(want.probabilities.length);
    got.probabilities.forEach((p, j) => expect(Math.abs(p - want.probabilities[j])).toBeLessThan(1e-6));
    for (const key of ['score', 'noul', 'confidence'] as const) {
      expect(got[key] === undefined).toBe(want[key] === undefined);
      if (want[key] !== undefined) expect(Math.abs(got[key]! - want[key])).toBeLessThan(1e-6);
    }
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

// The goldens are current: the generator still makes the same requests, and the reference run
// now gives the same results for a spread of them.
describe.skipIf(!existsSync(PYTHON))(`the reference, run live (${PYTHON})`, () => {
  const ref = referenceTokenizer();
  it('the generator makes the stored requests', () => {
    expect(JSON.parse(JSON.stringify(goldenRequests(ref)))).toEqual(goldens.requests);
  });

  it('gives the stored results', () => {
    const picked = goldens.requests.filter(
      (r, i) => i % 9 === 0 || goldens.results[i]!.refused || r.name.includes('limit') || r.name.includes('special'),
    );
    expect(picked.length).toBeGreaterThanOrEqual(20);
    const fresh = runReference(picked, ref);
    for (const result of fresh) expect(result).toEqual(goldens.results.find((g) => g.name === result.name));
  });
});
if (!existsSync(PYTHON)) console.warn(`${PYTHON} not found: the live run of the Laya reference is skipped`);
