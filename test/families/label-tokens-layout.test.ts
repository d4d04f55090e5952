// The label-tokens layout against goldens made by an independent reference (docs/families/
// label-tokens.md written in Python, never from this TypeScript): on every golden request of the
// five test contracts, the prefix, the cut, every row's piece and label ids and the refusals must
// be identical. Plus the contract file's rules (a broken one does not load, naming the field) and
// the family's registration (decision.json's layout id, the registry's family).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as modelsCmd } from '../../src/commands/models.js';
import { BudgetError, ModelLoadError } from '../../src/engine/errors.js';
import { detectFamily } from '../../src/engine/families/detect.js';
import { isRowFamily } from '../../src/engine/families/list.js';
import {
  dataEncoder,
  labelTokensLayout,
  LabelTokensRefusal,
  parseContract,
  planLabelTokens,
  readLabelTokensFolder,
} from '../../src/engine/families/label-tokens/index.js';
import { LABEL_TOKENS_CONTRACTS, type LabelTokensContract } from '../../tools/families/label-tokens/replica.js';
import { expectCrossesAsBudgetError, thrownBy } from './golden-helpers.js';
import { goldensOf, labelTokensRequest, loadContract, REPLICA_BUDGETS } from './label-tokens-helpers.js';

const loaded = new Map<LabelTokensContract, Awaited<ReturnType<typeof loadContract>>>();

beforeAll(async () => {
  for (const c of LABEL_TOKENS_CONTRACTS) loaded.set(c, await loadContract(c));
}, 300_000);

describe.each(LABEL_TOKENS_CONTRACTS)('the %s contract against its goldens', (contract) => {
  const goldens = goldensOf(contract);
  it('has goldens on at least 70 requests, refusals among them', () => {
    expect(goldens, `test/families/label-tokens/${contract}.goldens.json`).toBeDefined();
    expect(goldens!.requests.length).toBeGreaterThanOrEqual(70);
    expect(goldens!.results.some((r) => r.refused)).toBe(true);
  });
  const cases = (goldens?.requests ?? []).map((g, i) => [g.name, i] as const);
  it.each(cases)('%s', (name, i) => {
    const { codec, settings } = loaded.get(contract)!;
    const g = goldens!.requests[i]!;
    const want = goldens!.results[i]!;
    expect(want.name).toBe(name);
    const request = labelTokensRequest(g);
    const thrown = thrownBy(() => labelTokensLayout(request, settings, { data: dataEncoder(codec) }));
    if (want.refused === 'type' || want.refused === 'options' || want.refused === 'levels') {
      expect(thrown).toBeInstanceOf(LabelTokensRefusal);
      expect((thrown as LabelTokensRefusal).refused).toBe(want.refused);
      // The message names the limit: the supported types, or the most options / levels.
      const limit = want.refused === 'type' ? settings.types.join(', ') : String((thrown as BudgetError).limit);
      expect((thrown as Error).message).toContain(limit);
      expectCrossesAsBudgetError(thrown);
      return;
    }
    expect(thrown).toBeUndefined();
    const layout = labelTokensLayout(request, settings, { data: dataEncoder(codec) });
    const plan = thrownBy(() => planLabelTokens(request, codec, settings, REPLICA_BUDGETS));
    if (want.refused === 'context') {
      // A row past the model's context (or past the question budget below it): a BudgetError, the API's 422.
      expect(plan).toBeInstanceOf(BudgetError);
      expect((plan as Error).message).toMatch(/\d+ tokens/);
      return;
    }
    expect(want.refused).toBeUndefined();
    expect(layout.prefix).toEqual(want.prefix);
    expect(layout.cut).toBe(want.cut);
    expect(layout.rows.map((r) => ({ key: r.key, piece: r.piece, labels: r.labels }))).toEqual(want.rows);
    // The plan is the layout: the prefix shared, each row a planned question ending at its slot.
    const planned = planLabelTokens(request, codec, settings, REPLICA_BUDGETS);
    expect(planned.prefix).toEqual(want.prefix);
    expect(planned.questions.map((q) => q.suffix)).toEqual(want.rows!.map((r) => r.piece));
    expect(planned.readout?.family).toBe('label-tokens');
  });
});

describe('the contract file', () => {
  const base = { state: 'S: {state}\n', question: 'Q: {question}\n{options}A:', option: '{label}. {text}\n' };
  const where = 'x/decision.json';
  const fails = (contract: unknown) => thrownBy(() => parseContract(contract, where));

  it('fills the page defaults', () => {
    const c = parseContract(base, where);
    expect(c).toMatchObject({
      name: 'label-tokens',
      types: ['choice', 'noul', 'score'],
      chat: null,
      assistantPrefix: '',
      render: 'text',
      stateTokens: 32_768,
      labels: { choice: 'letters', noul: ['A', 'B'], score: 'digits' },
      noul: { order: ['true', 'false'], true: 'Yes', false: 'No' },
    });
    expect(c.maxOptions).toBeUndefined();
    expect(parseContract({ ...base, labels: { choice: ['x', 'y'] } }, where).labels).toEqual({
      choice: ['x', 'y'],
      noul: ['A', 'B'],
      score: 'digits',
    });
    // Other braces are literal text.
    expect(parseContract({ ...base, state: '{x} {state} {{}}' }, where).state).toEqual([
      { text: '{x} ' },
      { slot: 'state' },
      { text: ' {{}}' },
    ]);
  });

  it.each([
    [{ ...base, state: 'no placeholder' }, /contract\.state: holds 0 \{state\}/],
    [{ ...base, state: '{state}{state}' }, /contract\.state: holds 2 \{state\}/],
    [{ ...base, state: '{state}{question}' }, /contract\.state: holds 1 \{question\}/],
    [{ ...base, question: '{question}' }, /contract\.question: holds 0 \{options\}/],
    [{ ...base, question: '{question}{question}{options}' }, /contract\.question: holds 2 \{question\}/],
    [{ ...base, option: '{text}' }, /contract\.option: holds 0 \{label\}/],
    [{ ...base, option: '{label}{text}{text}' }, /contract\.option: holds 2 \{text\}/],
    [{ ...base, question: undefined }, /contract\.question/],
    [{ ...base, types: ['choice', 'yes'] }, /contract\.types\[1\]/],
    [{ ...base, types: [] }, /contract\.types/],
    [{ ...base, types: ['noul', 'noul'] }, /contract\.types/],
    [{ ...base, render: 'xml' }, /contract\.render/],
    [{ ...base, state_tokens: 0 }, /contract\.state_tokens/],
    [{ ...base, state_tokens: 1.5 }, /contract\.state_tokens/],
    [{ ...base, labels: { choice: 'roman' } }, /contract\.labels\.choice/],
    [{ ...base, labels: { noul: ['A'] } }, /contract\.labels\.noul/],
    [{ ...base, labels: { score: ['1', '1'] } }, /contract\.labels\.score/],
    [{ ...base, max_options: 1 }, /contract\.max_options/],
    [{ ...base, noul: { order: ['true', 'true'] } }, /contract\.noul\.order/],
    [{ ...base, chat: 'yes' }, /contract\.chat/],
    [undefined, /contract/],
  ])('refuses a broken contract, naming the field (%#)', (contract, field) => {
    const thrown = fails(contract);
    expect(thrown).toBeInstanceOf(ModelLoadError);
    expect((thrown as Error).message).toMatch(field);
    expect((thrown as Error).message).toContain(where);
  });
});

describe('a folder', () => {
  const work = mkdtempSync(join(tmpdir(), 'assay-label-tokens-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  /** The generic replica's codec reading a decision.json with this contract (and calibration). */
  const read = (contract: unknown, calibration?: unknown) => {
    const { codec } = loaded.get('generic')!;
    const dir = mkdtempSync(join(work, 'f-'));
    writeFileSync(join(dir, 'decision.json'), JSON.stringify({ layout: 'label-tokens-v1', contract }));
    if (calibration !== undefined) writeFileSync(join(dir, 'calibration.json'), JSON.stringify(calibration));
    return () => readLabelTokensFolder(dir, codec);
  };
  const base = { state: 'S: {state}\n', question: 'Q: {question}\n{options}A:', option: '{label}. {text}\n' };

  it('is the label-tokens family by its layout id or the registry, run by the decoder engine', () => {
    const { dir } = loaded.get('jevos')!;
    expect(detectFamily(dir)).toBe('label-tokens');
    expect(detectFamily(loaded.get('generic')!.dir, 'label-tokens')).toBe('label-tokens');
    expect(isRowFamily('label-tokens')).toBe(false);
  });

  it('assay models lists it with its contract’s name', async () => {
    const reg = join(work, 'registry.json');
    const entry = (c: LabelTokensContract) => ({
      path: loaded.get(c)!.dir,
      description: 'd',
      release_date: '2026-11-27',
      listed: true,
    });
    writeFileSync(
      reg,
      JSON.stringify({ default: 'cua-1', models: { 'cua-1': entry('cua'), 'jevos-1': entry('jevos') } }),
    );
    let out = '';
    const stdout = new Writable({ write: (c, _e, cb) => void ((out += String(c)), cb()) });
    expect(await modelsCmd(['--registry', reg, '--format', 'table'], { stdout, stderr: stdout, env: {} })).toBe(0);
    expect(out).toMatch(/^cua-1 .* label-tokens \(cua-s1-style\) +d$/m);
    expect(out).toMatch(/^jevos-1 .* label-tokens \(jevos-style\) +d$/m);
  });

  it('builds the label tables from the tokenizer and refuses labels that are not one token', () => {
    const { settings } = loaded.get('winnow')!;
    expect(settings.labels.choice.strings.slice(0, 28)).toEqual([
      ...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.split(''),
      ...settings.labels.choice.strings.slice(26, 28),
    ]);
    expect(settings.labels.choice.strings[26]).toMatch(/^[A-Z]{2}$/);
    expect(settings.maxOptions).toBe(64);
    expect(loaded.get('generic')!.settings.maxOptions).toBe(settings.labels.choice.ids.length);
    expect(loaded.get('tev')!.settings.labels.score.strings).toEqual(['1', '2', '3', '4', '5']);
    expect(() => read({ ...base, labels: { noul: ['yes', 'definitely not'] } })()).toThrow(
      /contract\.labels\.noul\[1\].*not one/,
    );
    expect(() => read({ ...base, labels: { choice: ['<|im_start|>', 'B'] } })()).toThrow(
      /contract\.labels\.choice\[0\]/,
    );
  });

  it('reads calibration.json, [1, 1, 1] without one; a bad one does not load', () => {
    expect(read(base)().temperatures).toEqual({ choice: 1, score: 1, noul: 1 });
    expect(read(base, { temperature: [2, 3, 4] })().temperatures).toEqual({ choice: 2, score: 3, noul: 4 });
    expect(read(base, { temperature: [2, 0, 4] })).toThrow(ModelLoadError);
    expect(read(base, { temperature: 'hot' })).toThrow(/calibration\.json/);
  });

  it('the chat split: the template around the user message, the contract system text, written once', () => {
    const { codec } = loaded.get('generic')!;
    const { settings } = read({ ...base, chat: { system: 'SYS' } })();
    const text = codec.decode([...settings.head, ...settings.tail]);
    expect(text).toContain('SYS');
    expect(codec.decode(settings.head)).toMatch(/user\n/);
    expect(codec.decode(settings.tail)).toMatch(/assistant\n/);
    expect(codec.decode(read({ ...base, chat: {} })().settings.head)).not.toContain('system');
    // Without `chat`, the row is the contract's text alone.
    expect(codec.decode(read(base)().settings.head)).toBe('S: ');
  });

  it('refuses a broken contract at load, naming the field', () => {
    expect(read({ ...base, option: '{label}' })).toThrow(/decision\.json: contract\.option: holds 0 \{text\}/);
  });
});
