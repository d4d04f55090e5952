// The NLI pairs layout (`nli-pairs`) against goldens made by an independent reference: the
// zero-shot pipeline's rules written in Python (tools/families/nli/nli_pairs.py), never from this
// TypeScript. Rows, token type ids, masks, cuts and refusals must be identical; the readout of
// fake logits agrees within 1e-6 (below). docs/families/nli-pairs.md.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BudgetError, ModelLoadError } from '../../src/engine/errors.js';
import { readNliConfig, readNliLabels, type NliConfig } from '../../src/engine/families/nli/config.js';
import {
  NLI_RULES,
  nliBatch,
  nliLayout,
  NliHypothesisTooLong,
  type NliQuestion,
  type NliRules,
} from '../../src/engine/families/nli/layout.js';
import { nliReadout } from '../../src/engine/families/nli/readout.js';
import { hypothesisTemplate } from '../../src/engine/families/nli/template.js';
import { nliTokenizer, type LoadedNliTokenizer } from '../../src/engine/families/nli/tokenizer.js';
import {
  goldenRequests,
  NLI_GOLDENS,
  referenceTokenizers,
  runReference,
  type GoldenModel,
  type GoldenRequest,
  type TokenizerName,
} from '../../tools/families/nli/goldens.js';
import { NLI_TEST_TOKENIZERS, writeNliTestTokenizers } from '../../tools/families/nli/tokenizers.js';
import * as golden from './golden-helpers.js';

const goldens = golden.readGoldens<golden.Goldens<GoldenRequest> & { models: Record<string, GoldenModel> }>(
  NLI_GOLDENS,
);

// The tokenizers as a model folder holds them: written to a temporary folder and read back.
const dir = mkdtempSync(join(tmpdir(), 'assay-nli-'));
writeNliTestTokenizers(dir);
const files = Object.fromEntries(
  (Object.keys(NLI_TEST_TOKENIZERS) as TokenizerName[]).map((name) => [
    name,
    {
      tokenizer: JSON.parse(readFileSync(join(dir, name, 'tokenizer.json'), 'utf8')) as Record<string, unknown>,
      config: JSON.parse(readFileSync(join(dir, name, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>,
    },
  ]),
) as Record<TokenizerName, { tokenizer: Record<string, unknown>; config: Record<string, unknown> }>;
rmSync(dir, { recursive: true });
const toks = {
  deberta: nliTokenizer(files.deberta.tokenizer, files.deberta.config),
  modernbert: nliTokenizer(files.modernbert.tokenizer, files.modernbert.config),
} as Record<TokenizerName, LoadedNliTokenizer>;

function folder(model: string): { tok: LoadedNliTokenizer; config: NliConfig } {
  const m = goldens.models[model]!;
  return {
    tok: toks[m.tokenizer],
    config: readNliConfig({ nli: m.nli_config, tokenizerConfig: files[m.tokenizer].config, modelConfig: m.config }),
  };
}

const question = (r: GoldenRequest) => golden.layoutQuestion<NliQuestion>(r);

/** The layout's answer in the goldens' shape: the rows, or the refusal's facts. */
function layout(r: GoldenRequest, rules: NliRules = NLI_RULES): Record<string, unknown> {
  const { tok, config } = folder(r.model);
  try {
    return { ...nliLayout(question(r), r.state as any, tok, config, rules) };
  } catch (error) {
    if (!(error instanceof NliHypothesisTooLong)) throw error;
    const { option, hypothesisTokens, count, limit } = error;
    return { refused: { option, hypothesisTokens, count, limit } };
  }
}

const expected = (i: number) => golden.layoutResult(goldens, i);
const cases = golden.goldenCases(goldens);

describe('the goldens', () => {
  it('hold at least 100 requests for each tokenizer, covering the cases issue 37 names', () => {
    for (const tok of ['deberta', 'modernbert'])
      expect(goldens.requests.filter((r) => goldens.models[r.model]!.tokenizer === tok).length).toBeGreaterThanOrEqual(
        100,
      );
    const names = goldens.requests.map((r) => r.name).join('\n');
    for (const tag of ['deberta', 'modernbert'])
      for (const needed of [
        ...golden.ISSUE_37_CASES,
        'noul with criteria',
        'choice object and array descriptions',
        '[SEP] [CLS] [PAD] [UNK] [MASK] in state',
        'non-ASCII object state',
      ])
        expect(names).toContain(`${tag}: ${needed}`);
    for (const model of ['deberta-v2.0', 'modernbert-v2.0'])
      for (const needed of ['state at the limit', 'state one over the limit', 'hypothesis leaves none (refused)'])
        expect(names).toContain(`${model}: ${needed}`);
    const results = goldens.results;
    expect(results.filter((r) => r.refused).length).toBeGreaterThanOrEqual(12);
    expect(results.filter((r) => r.rows?.some((row: any) => row.truncated)).length).toBeGreaterThanOrEqual(20);
  });
});

describe('the TypeScript layout equals the reference', () => {
  it.each(cases)('%s', (_name, i) => {
    expect(layout(goldens.requests[i]!)).toEqual(expected(i));
  });

  it('cuts the premise only, keeping its start, and each row to its own room', () => {
    const i = goldens.requests.findIndex((r) => r.name === 'deberta-v2.0: choice rows cut to different lengths');
    const rows = (layout(goldens.requests[i]!) as any).rows as Array<{ ids: number[]; truncated: any }>;
    // The short option's row fits whole; the two longer hypotheses each cut the premise to their own room.
    expect(rows.map((r) => r.ids.length)).toEqual([510, 512, 512]);
    expect(rows[0]!.truncated).toBeUndefined();
    const kept = rows.slice(1).map((r) => r.truncated.premise.kept);
    expect(kept[0]).toBeLessThan(kept[1]);
    const one = goldens.requests.findIndex((r) => r.name === 'deberta-v2.0: hypothesis leaves one token of the state');
    expect((layout(goldens.requests[one]!) as any).rows[0].truncated.premise.kept).toBe(1);
  });

  it('refuses with a BudgetError (422) that names the limit', () => {
    const r = goldens.requests.find((x) => x.name === 'deberta-v2.0: one option of many does not fit (refused)')!;
    const { tok, config } = folder(r.model);
    const thrown = golden.thrownBy(() => nliLayout(question(r), r.state as any, tok, config));
    expect(thrown).toBeInstanceOf(NliHypothesisTooLong);
    expect(thrown).toBeInstanceOf(BudgetError);
    expect((thrown as BudgetError).budget).toBe('context');
    expect((thrown as BudgetError).message).toContain('at most 512 tokens a row');
    expect((thrown as BudgetError).message).toContain('option 1');
    expect(thrown).toMatchObject({ option: 1, hypothesisTokens: 521, count: 522, limit: 512 });
    golden.expectCrossesAsBudgetError(thrown);
  });

  it('reads token_type_ids for DeBERTa-v3 (premise 0, hypothesis 1) and none for ModernBERT', () => {
    const deb = goldens.results.find((r) => r.name === 'deberta: noul plain')!.rows[0];
    expect(deb.tokenTypeIds[0]).toBe(0);
    expect(deb.tokenTypeIds.at(-1)).toBe(1);
    const mod = goldens.results.find((r) => r.name === 'modernbert: noul plain')!.rows[0];
    expect(mod.tokenTypeIds).toBeUndefined();
  });
});

describe('a tokenizer.json with its own truncation and padding never cuts a row', () => {
  it('the loader disables both and says so', () => {
    expect(files.deberta.tokenizer.truncation).toMatchObject({ max_length: 16 });
    expect(files.deberta.tokenizer.padding).toMatchObject({ strategy: { Fixed: 16 } });
    expect(toks.deberta.disabled).toEqual(['truncation', 'padding']);
    expect(toks.modernbert.disabled).toEqual(['truncation', 'padding']);
  });

  it('rows are longer than the file’s max_length of 16, and unpadded', () => {
    for (const name of ['deberta: noul plain', 'modernbert: noul plain', 'deberta-v2.0: state at the limit']) {
      const r = goldens.requests.find((x) => x.name === name)!;
      const rows = (layout(r) as any).rows as Array<{ ids: number[] }>;
      expect(rows[0]!.ids.length).toBeGreaterThan(16);
      expect(rows[0]!.ids.length % 16 === 0 && rows[0]!.ids.at(-1) === toks.deberta.padId).toBe(false);
    }
    const long = toks.deberta.encode('a '.repeat(40));
    expect(long).toHaveLength(40);
  });
});

describe('batching pads rows on the right, inert behind mask 0', () => {
  it('pads to the longest row with the pad id, mask 0 and type 0', () => {
    const r = goldens.requests.find((x) => x.name === 'deberta: choice null / empty / text')!;
    const { rows } = nliLayout(question(r), r.state as any, toks.deberta, folder(r.model).config);
    const batch = nliBatch(rows, toks.deberta.padId);
    const longest = Math.max(...rows.map((x) => x.ids.length));
    expect(batch.length).toBe(longest);
    rows.forEach((row, j) => {
      expect(batch.inputIds[j]!.slice(0, row.ids.length)).toEqual(row.ids);
      expect(batch.inputIds[j]!.slice(row.ids.length).every((id) => id === toks.deberta.padId)).toBe(true);
      expect(batch.attentionMask[j]!.reduce((a, b) => a + b, 0)).toBe(row.ids.length);
      expect(batch.tokenTypeIds![j]!.slice(row.ids.length).every((t) => t === 0)).toBe(true);
    });
    const m = goldens.requests.find((x) => x.name === 'modernbert: choice two options')!;
    const mb = nliBatch(nliLayout(question(m), m.state as any, toks.modernbert, folder(m.model).config).rows, 151649);
    expect(mb.tokenTypeIds).toBeUndefined();
  });
});

describe('a changed rule changes rows of some golden request (the goldens notice)', () => {
  const changes: Array<[string, Partial<NliRules>]> = [
    ['special strings left in user text (the reference without the deviation)', { neutraliseSpecials: false }],
    ['the premise may lose all its tokens', { premiseKeepsOne: false }],
    ['the premise cut at its start', { cutPremise: 'start' }],
    ['a description joined by " - "', { descriptionSeparator: ' - ' }],
  ];
  golden.itNoticesRuleChanges(goldens, changes, (r, change) => layout(r, { ...NLI_RULES, ...change }));

  it('the pipeline’s default template instead of the folder’s', () => {
    const r = goldens.requests.find((x) => x.name === 'deberta: choice two options')!;
    const { tok, config } = folder(r.model);
    const other = { ...config, templates: { ...config.templates, choice: hypothesisTemplate('This example is {}.') } };
    expect(nliLayout(question(r), r.state as any, tok, other)).not.toEqual(expected(goldens.requests.indexOf(r)));
  });
});

describe('the folder’s settings', () => {
  it('max_len: nli_config.json over tokenizer_config.json over config.json', () => {
    expect(folder('deberta-v2.0').config).toMatchObject({ maxLen: 512, maxLenFrom: 'tokenizer_config.json' });
    expect(folder('modernbert-v2.0').config).toMatchObject({ maxLen: 512, maxLenFrom: 'nli_config.json' });
    expect(folder('modernbert-mnli-defaults').config).toMatchObject({
      maxLen: 8192,
      maxLenFrom: 'tokenizer_config.json',
    });
    const fallback = readNliConfig({
      tokenizerConfig: { model_max_length: 1e30 },
      modelConfig: { label2id: { entailment: 0, not_entailment: 1 }, max_position_embeddings: 512 },
    });
    expect(fallback).toMatchObject({ maxLen: 512, maxLenFrom: 'config.json' });
    expect(() => readNliConfig({ modelConfig: { label2id: { entailment: 0, x: 1 } } })).toThrow(/no context length/);
  });

  it('the entailment column as the pipeline finds it, and the column it is weighed against', () => {
    expect(readNliLabels(goldens.models['deberta-v2.0']!.config)).toEqual({
      columns: 2,
      entailment: 0,
      contradiction: 1,
    });
    expect(readNliLabels(goldens.models['deberta-small-mnli']!.config)).toEqual({
      columns: 3,
      entailment: 2,
      contradiction: 0,
    });
    expect(readNliLabels(goldens.models['modernbert-small']!.config)).toEqual({
      columns: 3,
      entailment: 0,
      contradiction: 2,
    });
    expect(readNliLabels({ id2label: { '0': 'ENTAILMENT', '1': 'NEUTRAL', '2': 'CONTRADICTION' } })).toEqual({
      columns: 3,
      entailment: 0,
      contradiction: 2,
    });
    expect(readNliLabels(goldens.models['deberta-scorer']!.config)).toEqual({
      columns: 1,
      entailment: 0,
      contradiction: 0,
    });
    expect(() => readNliLabels({ id2label: { '0': 'LABEL_0', '1': 'LABEL_1' } })).toThrow(ModelLoadError);
  });

  it('templates: Python format with {} or {0} for the option and {instructions}; the rest refused at load', () => {
    expect(hypothesisTemplate('{instructions} It is {0}, {{really}} {0}.').format('x', 'Q?')).toBe(
      'Q? It is x, {really} x.',
    );
    expect(hypothesisTemplate('This example is {}.').format('{instructions}', 'no')).toBe(
      'This example is {instructions}.',
    );
    for (const bad of [
      'no field',
      '{} and {}',
      '{} {0}',
      '{label}',
      '{:>5}',
      '{0!r}',
      'a } b',
      'a { b',
      '{instructions}',
    ])
      expect(() => hypothesisTemplate(bad), bad).toThrow(ModelLoadError);
  });
});

// Probabilities: the reference computes in Python floats and Assay in JavaScript numbers, both
// IEEE float64, from the same logits; they differ only in exp() and summation order, ~1e-15. 1e-6
// is far above that and far below what any rule difference moves (a wrong column, neutral read as
// contradiction, per-row instead of over-options softmax move these logits' probabilities by
// > 1e-3). The pipeline itself computes in float32 (~1e-7 relative), also inside 1e-6.
describe('the readout equals the reference', () => {
  const read = golden.readoutCases(goldens);
  it('covers every mode and label layout', () => {
    expect(read.length).toBeGreaterThanOrEqual(150);
    const modes = new Set(read.map(([, i]) => `${goldens.requests[i]!.model}:${goldens.results[i]!.readout.mode}`));
    for (const m of [
      'deberta-v2.0:row',
      'deberta-v2.0:options',
      'deberta-small-mnli:row',
      'deberta-small-mnli:options',
      'modernbert-small:row',
      'deberta-scorer:row',
      'deberta-scorer:options',
    ])
      expect(modes).toContain(m);
  });

  golden.itEachReadout(goldens, (r, want) => {
    const got = nliReadout(r.question.type, r.logits!, folder(r.model).config.labels);
    expect(got.mode).toBe(want.mode);
    expect(got.best).toBe(want.best);
    expect(got.entailment).toEqual(want.entailment);
    golden.expectReadoutWithin(got, want, 1e-6);
  });

  it('noul on a 3-way model drops neutral: P(yes) = σ(entailment − contradiction)', () => {
    const labels = readNliLabels(goldens.models['deberta-small-mnli']!.config);
    const p = nliReadout('noul', [[-1, 5, 2]], labels).noul!;
    expect(p).toBeCloseTo(1 / (1 + Math.exp(-(2 - -1))), 12);
  });
});

golden.describeLiveReference('NLI pairs', goldens, () => {
  const ref = referenceTokenizers();
  return { requests: () => goldenRequests(ref), run: (picked) => runReference(picked, ref) };
});
