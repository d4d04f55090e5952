// Goldens of the NLI pairs layout (`nli-pairs`), made by the independent Python reference
// (tools/families/nli/nli_pairs.py), never by Assay's TypeScript: the requests below (deterministic),
// over model-folder stand-ins for both tokenizers (tools/families/nli/tokenizers.ts), tokenized
// where the reference asks for it, laid out and read out by the reference.
// test/families/nli-layout.test.ts holds the TypeScript to them and reruns the reference on some.
//
//   npx tsx tools/families/nli/goldens.ts    rewrites test/families/nli/goldens.json
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import * as common from '../kit/golden-cases.js';
import * as kit from '../kit/goldens-kit.js';
import { aTokens, choice, type Json, noul, type Question, score } from '../kit/goldens-kit.js';
import { NLI_TEST_TOKENIZERS } from './tokenizers.js';
import type { TestTokenizer } from '../kit/tokenizer-kit.js';

export const NLI_REFERENCE = join(kit.ROOT, 'tools', 'families', 'nli', 'nli_pairs.py');
export const NLI_GOLDENS = join(kit.ROOT, 'test', 'families', 'nli', 'goldens.json');
const ABOUT = [
  'Goldens of the NLI pairs layout, made by tools/families/nli/nli_pairs.py (Python, from the pipeline’s rules), not by Assay.',
  'Tokenizers: the test replicas of tools/families/nli/tokenizers.ts. Regenerate: npx tsx tools/families/nli/goldens.ts',
];

export type TokenizerName = keyof typeof NLI_TEST_TOKENIZERS;

export interface GoldenRequest {
  name: string;
  model: string;
  state: Json;
  question: Question;
  /** Fake logits, one list per row (the model's columns). */
  logits?: number[][];
}

export interface GoldenModel {
  tokenizer: TokenizerName;
  nli_config: Json;
  config: Json;
}

const TWO_WAY = {
  id2label: { '0': 'entailment', '1': 'not_entailment' },
  label2id: { entailment: 0, not_entailment: 1 },
};
const MNLI_BART = {
  id2label: { '0': 'contradiction', '1': 'neutral', '2': 'entailment' },
  label2id: { contradiction: 0, neutral: 1, entailment: 2 },
};
const MNLI_TASKSOURCE = {
  id2label: { '0': 'entailment', '1': 'neutral', '2': 'contradiction' },
  label2id: { entailment: 0, neutral: 1, contradiction: 2 },
};

/** Model folders' stand-ins: the shipped shapes (2-way v2.0 zeroshot, 3-way MNLI), small ones that cut early, a 1-column scorer. */
export const GOLDEN_MODELS: Record<string, GoldenModel> = {
  'deberta-v2.0': {
    tokenizer: 'deberta',
    nli_config: { hypothesis_template: 'This text is about {}' },
    config: { ...TWO_WAY, max_position_embeddings: 512 },
  },
  'deberta-small-mnli': {
    tokenizer: 'deberta',
    nli_config: {
      max_len: 40,
      hypothesis_templates: {
        choice: '{instructions} The answer is {}.',
        score: 'The rating is {0}.',
        noul: '{} {{yes}}',
      },
    },
    config: MNLI_BART,
  },
  'deberta-scorer': {
    tokenizer: 'deberta',
    nli_config: { hypothesis_template: '{}', max_len: 128 },
    config: { id2label: { '0': 'LABEL_0' }, label2id: { LABEL_0: 0 } },
  },
  'modernbert-v2.0': {
    tokenizer: 'modernbert',
    nli_config: { hypothesis_template: 'This text is about {}', max_len: 512 },
    config: { ...TWO_WAY, max_position_embeddings: 8192 },
  },
  'modernbert-mnli-defaults': { tokenizer: 'modernbert', nli_config: null, config: MNLI_TASKSOURCE },
  'modernbert-small': {
    tokenizer: 'modernbert',
    nli_config: { max_len: 48, hypothesis_templates: { noul: 'It is true that {}' } },
    config: MNLI_TASKSOURCE,
  },
};

export interface ReferenceTokenizers {
  files: Record<TokenizerName, TestTokenizer>;
  tokenizers: Record<TokenizerName, Tokenizer>;
}

export function referenceTokenizers(): ReferenceTokenizers {
  const files = { deberta: NLI_TEST_TOKENIZERS.deberta(), modernbert: NLI_TEST_TOKENIZERS.modernbert() };
  const make = (t: TestTokenizer): Tokenizer =>
    new Tokenizer({ ...t.tokenizer, truncation: null, padding: null }, t.config);
  return { files, tokenizers: { deberta: make(files.deberta), modernbert: make(files.modernbert) } };
}

/** The reference's results for these requests: it names the texts to tokenize, then lays them out. */
export function runReference(requests: GoldenRequest[], ref: ReferenceTokenizers): Array<Record<string, unknown>> {
  const tokenizers = Object.fromEntries(
    Object.entries(ref.files).map(([name, t]) => [name, { tokenizer_json: t.tokenizer, tokenizer_config: t.config }]),
  );
  const job = { tokenizers, models: GOLDEN_MODELS, requests };
  // the texts to tokenize come by tokenizer
  return kit.runLayoutReference(NLI_REFERENCE, job, (segments: Record<TokenizerName, string[]>) =>
    Object.fromEntries(
      Object.entries(segments).map(([name, texts]) => [
        name,
        kit.tokenIds(ref.tokenizers[name as TokenizerName], texts),
      ]),
    ),
  );
}

// ------------------------------------------------------------------ the requests

/** The seeded texts' words: the shared groups, the tokenizers' special strings, template braces. */
const text = kit.seededText([
  ...kit.WORDS.english,
  ...kit.WORDS.nonAscii,
  '[MASK]',
  '[SEP]',
  '[CLS]',
  '[PAD]',
  '<|endoftext|>',
  '|||IP_ADDRESS|||',
  ...kit.WORDS.escapes,
  '{braces}',
  '{}',
]);

const STATE = 'Order #1042 arrived two days late and the box was damaged. The customer asks for a refund.';

function requests(ref: ReferenceTokenizers): GoldenRequest[] {
  const out: GoldenRequest[] = [];
  const refund = 'The customer asks for a refund.';
  const topic = 'What is the main topic?';
  const severity = 'How severe is the complaint?';

  // the same cases for both tokenizers, over the shipped-shape folders
  for (const model of ['deberta-v2.0', 'modernbert-v2.0']) {
    const tag = model.split('-')[0]!;
    const add = (name: string, question: Question, state: Json = STATE, m = model): void => {
      out.push({ name: `${tag}: ${name}`, model: m, state, question });
    };
    // noul: criteria absent, partial, null, empty, structured
    add('noul plain', noul(refund));
    add('noul with criteria', noul(refund, { true: 'a refund is requested', false: 'no refund is mentioned' }));
    add('noul criteria true only', noul(refund, { true: 'money back is asked for' }));
    add('noul criteria false only (not read)', noul(refund, { false: 'only complains' }));
    common.noulShapes(add, refund);
    // choice: one option, descriptions null / "" / text / structured, 10 / 26 / 255 options
    add('choice one option', choice(topic, [['delivery', null]]));
    common.choiceDescriptions(add, topic);
    add(
      'choice braces in names stay text',
      choice(topic, [
        ['{}', '{0} {instructions}'],
        ['{{x}}', null],
      ]),
    );
    common.choiceCounts(add, topic, [10, 26, 255]);
    // score: 2 and 10 levels, structured levels
    common.scoreCounts(add, severity);
    add('score one level', score(severity, ['the only level']));
    common.structuredLevels(add, severity);
    // special-token strings in user text
    add(
      '[SEP] [CLS] [PAD] [UNK] [MASK] in state',
      noul(refund),
      '[CLS] first [SEP] second [PAD][UNK] third [MASK] [SEP]',
    );
    add('special strings in instructions', noul('[SEP] Is it late? [CLS] <|endoftext|>'));
    add(
      'special strings in option names and descriptions',
      choice(topic, [
        ['[MASK]', 'mask'],
        ['a[SEP]b', null],
        ['<|padding|>', '[CLS] x'],
      ]),
    );
    add('special strings in noul criteria', noul(refund, { true: 'yes [SEP] [MASK]' }));
    add('special strings in score levels', score(severity, ['<|padding|>none', '[UNK] some']));
    common.specialStringStates(add, refund);
    common.lookAlikes(add, refund);
    // non-ASCII and CJK
    common.nonAsciiTexts(add, refund, { cjk: '顧客は返金を求めています。', emoji: 'The customer is happy 🙂' });
    add('non-ASCII object state', noul(refund), { città: 'Zürich', 注文: ['返金', 'é'], emoji: '🙂' });
    // state shapes
    common.structuredStates(add, refund);
    add(
      'array state of objects',
      choice(topic, [
        ['delivery', null],
        ['billing', null],
      ]),
      [
        { role: 'user', text: 'late' },
        { role: 'agent', text: 'sorry' },
      ],
    );
    common.emptyStates(add, refund);
    add('numbers as Python writes them', noul(refund), {
      ints: [0, -0, 100, -7, 2 ** 53, 1e20],
      floats: [0.1, 1.5, -2.25, 1e-4, 1e-5, 1e21, 5e-324],
    });
    add('booleans and null state', noul(refund), [true, false, null, { t: true }]);
  }

  // limits: the state at, one over and far over; hypotheses that leave one token, none, or fit an empty state
  const rowLengths = (question: Question, model: string, state: Json = ''): number[] => {
    const [r] = runReference([{ name: 'probe', model, state, question }], ref);
    if (!r!.rows) throw new Error(`probe refused: ${JSON.stringify(r)}`);
    return (r!.rows as Array<{ ids: number[] }>).map((row) => row.ids.length);
  };
  const count = (tok: TokenizerName, s: string): number => kit.tokenCount(ref.tokenizers[tok], s);
  const limitOf = (model: string): number => {
    const nli = GOLDEN_MODELS[model]!.nli_config as { max_len?: number } | null;
    return nli?.max_len ?? (NLI_TEST_TOKENIZERS[GOLDEN_MODELS[model]!.tokenizer]().config.model_max_length as number);
  };
  for (const model of ['deberta-v2.0', 'modernbert-v2.0', 'deberta-small-mnli', 'modernbert-small']) {
    const tok = GOLDEN_MODELS[model]!.tokenizer;
    const max = limitOf(model);
    const add = (name: string, question: Question, state: Json): void => {
      out.push({ name: `${model}: ${name}`, model, state, question });
    };
    const q = noul(refund);
    const [empty] = rowLengths(q, model);
    const room = max - empty!;
    if (count(tok, aTokens(room)) !== room) throw new Error('aTokens: " a" is not one token');
    add('state at the limit', q, aTokens(room));
    add('state one over the limit', q, aTokens(room + 1));
    add('state far over the limit', q, aTokens(3 * room));
    add('object state over the limit', q, { text: aTokens(room + 10) });
    add('list state over the limit (cut at its end, as only_first does)', q, [
      'first turn',
      aTokens(room),
      'newest turn',
    ]);
    // options of different lengths: each row's premise is cut to its own room
    const opts = choice(topic, [
      ['short', null],
      ['long', aTokens(Math.floor(room / 3))],
      ['mid', 'a middle one'],
    ]);
    add('choice rows cut to different lengths', opts, aTokens(room));
    // the hypothesis alone: `n` tokens of instructions make a noul row of specials + n (template "{}")
    const base = rowLengths(noul('a'), model)[0]! - count(tok, 'a'); // the row without the statement
    const stmt = (n: number): Question => noul(aTokens(n));
    if (rowLengths(stmt(5), model)[0] !== base + 5) throw new Error('statement tokens are not additive');
    add(
      'hypothesis leaves one token of the state',
      stmt(max - base - 1),
      'a long state that must lose all but one token',
    );
    add('hypothesis leaves none (refused)', stmt(max - base), 'short');
    add('hypothesis fills the row, empty state', stmt(max - base), '');
    add('hypothesis over the row, empty state (refused)', stmt(max - base + 1), '');
    add(
      'one option of many does not fit (refused)',
      choice(topic, [
        ['a', null],
        ['b', aTokens(max)],
        ['c', null],
      ]),
      'state',
    );
  }

  // the other folders: 3-way labels, templates with {instructions} and {0}, the pipeline default, a scorer
  for (const model of ['deberta-small-mnli', 'modernbert-mnli-defaults', 'modernbert-small', 'deberta-scorer']) {
    const add = (name: string, question: Question, state: Json = 'short state'): void => {
      out.push({ name: `${model}: ${name}`, model, state, question });
    };
    add('noul', noul(refund));
    add('noul with criteria', noul(refund, { true: 'a refund', false: 'none' }));
    add(
      'choice 3',
      choice(topic, [
        ['a', 'first'],
        ['b', null],
        ['c', 'third'],
      ]),
    );
    add('choice one option', choice(topic, [['only', null]]));
    add(
      'choice object instructions',
      choice({ ask: 'topic?', lang: 'en' }, [
        ['x', null],
        ['y', null],
      ]),
    );
    add('score 4', score('How bad?', ['fine', 'meh', 'bad', 'awful']));
  }

  // seeded mixtures of everything above
  const rand = kit.seeded(37);
  for (let i = 0; i < 24; i++) {
    const { question, state } = kit.mixture(rand, text, i, { options: 12, descriptionWords: 20 });
    const models = ['deberta-v2.0', 'modernbert-v2.0', 'deberta-small-mnli', 'modernbert-small'];
    out.push({ name: `mixed ${i}`, model: models[i % 4]!, state, question });
  }
  return out;
}

function columns(model: string): number {
  return Object.keys((GOLDEN_MODELS[model]!.config as { id2label: object }).id2label).length;
}

/** The golden requests, with fake logits per row (seeded; a few ties and extremes). */
export function goldenRequests(ref: ReferenceTokenizers = referenceTokenizers()): GoldenRequest[] {
  const rand = kit.seeded(1042);
  return requests(ref).map((r, i) => {
    // a row an option: a noul has one; a column a label
    const rows = r.question.type === 'noul' ? 1 : kit.criteriaCount(r.question);
    return { ...r, logits: kit.fakeLogits(rand, i, rows, columns(r.model), 6) };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const ref = referenceTokenizers();
  const reqs = goldenRequests(ref);
  const results = runReference(reqs, ref);
  const cut = results.filter((r) =>
    (r.rows as Array<{ truncated?: unknown }> | undefined)?.some((row) => row.truncated),
  ).length;
  kit.writeGoldens(NLI_GOLDENS, { about: ABOUT, models: GOLDEN_MODELS }, reqs, results, `, ${cut} with a premise cut`);
}
