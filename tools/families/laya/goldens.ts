// Goldens of the Laya layout (`laya-markers`), made by the independent Python reference
// (tools/families/laya/laya_layout.py), never by Assay's TypeScript: the requests below (deterministic),
// tokenized by the test tokenizer (tools/families/laya/tokenizer.ts) where the reference asks for
// it, laid out and read out by the reference. test/families/laya-layout.test.ts holds the
// TypeScript layout to them, and reruns the reference on some to prove them current.
//
//   npx tsx tools/families/laya/goldens.ts    rewrites test/families/laya/goldens.json
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import * as common from '../kit/golden-cases.js';
import * as kit from '../kit/goldens-kit.js';
import { aTokens, choice, type Json, letters, noul, type Question, score } from '../kit/goldens-kit.js';
import { layaTestTokenizer } from './tokenizer.js';

export const LAYA_REFERENCE = join(kit.ROOT, 'tools', 'families', 'laya', 'laya_layout.py');
export const LAYA_GOLDENS = join(kit.ROOT, 'test', 'families', 'laya', 'goldens.json');
const ABOUT = [
  'Goldens of the Laya layout, made by tools/families/laya/laya_layout.py (Python, from the authors’ rules), not by Assay.',
  'Tokenizer: the test replica of tools/families/laya/tokenizer.ts. Regenerate: npx tsx tools/families/laya/goldens.ts',
];

/** A golden request: choice criteria as [name, description] pairs (the caller's order). */
export interface GoldenRequest {
  name: string;
  config: string;
  state: Json;
  question: Question;
  logits?: number[];
}

/** rl_agent_config.json stand-ins: the shipped shapes (max_len 512 / 1024) and a small one that cuts early. */
export const GOLDEN_CONFIGS: Record<string, Json> = {
  'laya-en': {
    max_len: 512,
    head_max_len: 192,
    temperature: [1.31, 0.87, 1.12],
    temperature_by_options: {
      'choice:2': 1.2,
      'choice:3-5': 0.93,
      'choice:6-10': 0.71,
      'choice:11+': 0.1006,
      'score:2': 1.4,
      'score:3-5': 6.5,
      'score:6-10': 2.2,
      'noul:2': 1.05,
    },
  },
  'laya-typed': { max_len: 1024, head_max_len: 192, temperature: [1.1, '1.7', null] },
  small: { max_len: 64, head_max_len: 32, temperature: [0.2, 9, 1], temperature_by_options: { 'noul:2': true } },
  defaults: {},
};

/** The tokenizer facts the reference needs, read off the test tokenizer. */
export interface ReferenceTokenizer {
  tokenizer: Tokenizer;
  facts: { cls_id: number; sep_id: number; mask_id: number; mask_token: string; special_tokens: string[] };
}

export function referenceTokenizer(): ReferenceTokenizer {
  const { tokenizer: json, config } = layaTestTokenizer();
  const tokenizer = new Tokenizer(json as object, config);
  const id = (t: string): number => tokenizer.token_to_id(t)!;
  const special_tokens = [...tokenizer.get_added_tokens_decoder().values()]
    .filter((t) => t.special)
    .map((t) => t.content);
  return {
    tokenizer,
    facts: { cls_id: id('[CLS]'), sep_id: id('[SEP]'), mask_id: id('[MASK]'), mask_token: '[MASK]', special_tokens },
  };
}

/** The reference's results for these requests: it names the texts to tokenize, then lays them out. */
export function runReference(requests: GoldenRequest[], tok: ReferenceTokenizer): Array<Record<string, unknown>> {
  const job = { tokenizer: tok.facts, configs: GOLDEN_CONFIGS, requests };
  return kit.runLayoutReference(LAYA_REFERENCE, job, (segments: string[]) => kit.tokenIds(tok.tokenizer, segments));
}

// ------------------------------------------------------------------ the requests

/** The seeded texts' words: the shared groups, billing words, the tokenizer's special strings. */
const text = kit.seededText([
  ...kit.WORDS.english,
  'billing',
  'shipping',
  ...kit.WORDS.nonAscii,
  '[MASK]',
  '[SEP]',
  '[CLS]',
  '<|endoftext|>',
  '|||IP_ADDRESS|||',
  ...kit.WORDS.escapes,
]);

function requests(tok: ReferenceTokenizer): GoldenRequest[] {
  const out: GoldenRequest[] = [];
  const add = (
    name: string,
    question: Question,
    state: Json = 'Order #1042 arrived two days late and the box was damaged. The customer asks for a refund.',
    config = 'laya-en',
  ): void => {
    out.push({ name, config, state, question });
  };
  const refund = 'Does the customer ask for a refund?';
  const count = (s: string): number => kit.tokenCount(tok.tokenizer, s);

  // noul: criteria absent, partial, null, empty, structured
  add('noul plain', noul(refund));
  add('noul both criteria', noul(refund, { true: 'a refund is requested', false: 'no refund is mentioned' }));
  add('noul true only', noul(refund, { true: 'asks for money back' }));
  add('noul false only', noul(refund, { false: 'only complains' }));
  common.noulShapes(add, refund);

  // choice: one option, descriptions null / "" / text / structured, 10 / 26 / 255 options
  const topic = 'What is the main topic?';
  add('choice one option, no description', choice(topic, [['delivery', null]]));
  common.choiceDescriptions(add, topic);
  common.choiceCounts(add, topic, [10, 26, 40, 100, 120]);
  // the even cut leaves 4 tokens an option: 125 fill max_len exactly, 126 lose the row's end, 127 and 255 are refused
  for (const n of [125, 126, 127, 255])
    add(
      `choice ${n} options`,
      choice(
        topic,
        letters(n).map((l) => [l, `the option named ${l}`]),
      ),
    );
  add(
    'choice 255 options, 1024 context',
    choice(
      topic,
      letters(255).map((l) => [l, null]),
    ),
    'short state',
    'laya-typed',
  );
  add(
    'choice long options (48-token cap)',
    choice(topic, [
      ['long', aTokens(80)],
      ['short', 'b'],
      ['mid', aTokens(47)],
    ]),
  );
  add(
    'choice many long options (even cut)',
    choice(
      topic,
      letters(10).map((l) => [l, aTokens(30)]),
    ),
  );
  add(
    'choice names with special strings',
    choice(topic, [
      ['[MASK]', 'mask'],
      ['a[SEP]b', null],
      ['<|padding|>', '[CLS] x'],
    ]),
  );

  // score: 2 and 10 levels, structured levels
  const severity = 'How severe is the complaint?';
  common.scoreCounts(add, severity);
  common.structuredLevels(add, severity);
  add(
    'score 10 long levels',
    score(
      severity,
      Array.from({ length: 10 }, () => aTokens(40)),
    ),
  );
  add('score levels with [MASK]', score(severity, ['[MASK] none', 'some [MASK][MASK]', '[[MASK]]']));

  // special-token strings in user text: the mask token (the authors' rule) and every other (Assay's)
  add('[MASK] in state', noul(refund), 'The customer wrote [MASK] and [MASK][MASK] in the form.');
  add('[MASK] in instructions', noul('Is [MASK] a refund request?'));
  add(
    '[MASK] in option description',
    choice(topic, [
      ['a', 'has [MASK] in it'],
      ['b', '[MASK]'],
    ]),
  );
  add('[MASK] in noul criteria', noul(refund, { true: 'yes [MASK]', false: '[MASK]' }));
  add('[SEP] [CLS] [PAD] [UNK] in state', noul(refund), '[CLS] first [SEP] second [PAD][UNK] third [SEP]');
  add('special strings in instructions', noul('[SEP] Is it late? [CLS] <|endoftext|>'));
  add('special strings in score levels', score(severity, ['<|padding|>none', '[UNK] some']));
  common.specialStringStates(add, refund);
  add('special strings in object instructions', noul({ q: '[MASK]?', sep: '[SEP]' }));
  common.lookAlikes(add, refund);

  // non-ASCII and CJK text
  common.nonAsciiTexts(add, refund, { cjk: '顧客は返金を求めていますか?', emoji: 'Is the customer happy? 🙂' });
  add('non-ASCII object state (ensure_ascii=False)', noul(refund), {
    città: 'Zürich',
    注文: ['返金', 'é'],
    emoji: '🙂',
  });
  add('non-ASCII object instructions', noul({ frage: 'Möchte der Kunde eine Rückerstattung?' }));

  // state shapes
  common.structuredStates(add, refund);
  add('array state of objects', noul(refund), [
    { role: 'user', text: 'late' },
    { role: 'agent', text: 'sorry' },
  ]);
  common.emptyStates(add, refund);
  add('numbers as Python writes them', noul(refund), {
    ints: [0, -0, 100, -7, 2 ** 53, 2 ** 53 + 2, 1e20],
    floats: [0.1, 1.5, -2.25, 123.456, 1e-4, 1e-5, 1.5e-7, 1e21, 1.5e300, 5e-324, 0.30000000000000004],
  });
  add('booleans and null', noul(refund), [true, false, null, { t: true }]);
  add('integer-like keys in state', noul(refund), { b: 1, '2': 'two', '1': 'one', a: 0 });

  // instructions cut: they keep at least 8 tokens, else what the options leave of head_max_len
  add('long instructions', noul(aTokens(600)));
  add(
    'long instructions, many options',
    choice(
      aTokens(300),
      letters(40).map((l) => [l, `option ${l}`]),
    ),
  );
  add('long CJK instructions', noul('返金'.repeat(400)));

  // the state at and over the context limit (max_len 512, 1024, 64)
  const probe = (question: Question, config: string): number => {
    const [r] = runReference([{ name: 'probe', config, state: '', question }], tok);
    const limit = (GOLDEN_CONFIGS[config] as { max_len?: number }).max_len ?? 512;
    return limit - (r!.ids as number[]).length; // the row with an empty state ends [SEP][SEP]
  };
  for (const [config, question] of [
    ['laya-en', noul(refund)],
    [
      'laya-typed',
      choice(topic, [
        ['delivery', null],
        ['billing', 'invoices'],
      ]),
    ],
    ['small', score('How bad?', ['fine', 'bad'])],
  ] as const) {
    const room = probe(question, config);
    if (count(aTokens(room)) !== room) throw new Error('aTokens: " a" is not one token');
    add(`state at the limit (${config})`, question, aTokens(room), config);
    add(`state one over the limit (${config})`, question, aTokens(room + 1), config);
    add(`state far over the limit (${config})`, question, aTokens(3 * room), config);
    // a list state keeps its end: find a list whose Python JSON (ASCII strings: `["…", "…"]`) is exactly room tokens
    const atLimit = ['first turn', 'first', 'hello there', 'one'].flatMap((first) =>
      Array.from({ length: 16 }, (_, k) => [first, aTokens(room - k)]).filter(
        (s) => count(`[${s.map((x) => JSON.stringify(x)).join(', ')}]`) === room,
      ),
    )[0];
    if (!atLimit) throw new Error(`no list state of exactly ${room} tokens`);
    add(`list state at the limit (${config})`, question, atLimit, config);
    add(`list state over the limit keeps its end (${config})`, question, [...atLimit, 'newest turn'], config);
    add(`object state over the limit (${config})`, question, { text: aTokens(room + 10) }, config);
  }

  // the even cut starts when fewer than 16 tokens of head_max_len are left: 15 and 16 left
  /** An option [name, description] of exactly `t` tokens, its marker included. */
  const optionOf = (name: string, t: number): [string, Json] => {
    for (let n = 1; n < 48; n++) if (1 + count(` ${name}: ${aTokens(n)}`) === t) return [name, aTokens(n)];
    throw new Error(`no option of ${t} tokens`);
  };
  for (const [config, headMaxLen] of [
    ['laya-en', 192],
    ['small', 32],
  ] as const)
    for (const left of [15, 16]) {
      const used = headMaxLen - left;
      const base = Math.floor(used / 4);
      const sizes = [used - 3 * base, base, base, base];
      const opts = sizes.map((t, j) => optionOf(String.fromCharCode(80 + j), t));
      add(`${left} tokens of head_max_len left (${config})`, choice(aTokens(40), opts), 'short', config);
    }

  // the small config: every cut early
  add('small: noul', noul(refund), 'short', 'small');
  add(
    'small: choice 3',
    choice(topic, [
      ['a', 'first'],
      ['b', null],
      ['c', 'third'],
    ]),
    'short',
    'small',
  );
  add(
    'small: choice 8 (even cut)',
    choice(
      topic,
      letters(8).map((l) => [l, `option ${l} text`]),
    ),
    'short',
    'small',
  );
  add(
    'small: score 10',
    score(
      'How bad?',
      Array.from({ length: 10 }, (_, i) => `level text ${i}`),
    ),
    'short',
    'small',
  );
  for (const n of [13, 14, 15])
    add(
      `small: choice ${n}`,
      choice(
        topic,
        letters(n).map((l) => [l, `option ${l} text`]),
      ),
      'short',
      'small',
    );
  add('small: long instructions', noul(aTokens(100)), 'short', 'small');
  add(
    'defaults config',
    choice(topic, [
      ['a', null],
      ['b', null],
      ['c', null],
    ]),
    'state',
    'defaults',
  );
  add(
    'defaults config, 12 options',
    choice(
      topic,
      letters(12).map((l) => [l, null]),
    ),
    'state',
    'defaults',
  );

  // seeded mixtures of everything above
  const rand = kit.seeded(37);
  for (let i = 0; i < 30; i++) {
    const { question, state } = kit.mixture(rand, text, i, { options: 20, descriptionWords: 30 });
    add(`mixed ${i}`, question, state, i % 5 === 4 ? 'laya-typed' : 'laya-en');
  }
  return out;
}

/** The golden requests, with fake marker logits (seeded; a few ties and extremes). */
export function goldenRequests(tok: ReferenceTokenizer = referenceTokenizer()): GoldenRequest[] {
  const rand = kit.seeded(1042);
  return requests(tok).map((r, i) => {
    // a logit a marker: a noul has two
    const markers = r.question.type === 'noul' ? 2 : kit.criteriaCount(r.question);
    return { ...r, logits: kit.fakeLogits(rand, i, 1, markers, 4)[0]! };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const tok = referenceTokenizer();
  const reqs = goldenRequests(tok);
  kit.writeGoldens(LAYA_GOLDENS, { about: ABOUT, configs: GOLDEN_CONFIGS }, reqs, runReference(reqs, tok));
}
