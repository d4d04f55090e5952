// Goldens of the Arbiter layout (`arbiter-fixed`), made by the independent Python reference
// (tools/families/arbiter/arbiter_layout.py), never by Assay's TypeScript: the requests below
// (deterministic), over the Gemma-style stand-in tokenizer the replica ships (gemma-tokenizer.ts)
// taken as ordinary text (without its added tokens: Assay's content-is-data rule, so no caller text
// can hold a control token), tokenized where the reference asks for it, laid out and read out by the
// reference, which fails on a row holding one of the tokenizer's added-token ids.
// test/families/arbiter-evaluator.test.ts holds the engine to them and reruns the reference on some.
//
//   npx tsx tools/families/arbiter/goldens.ts    rewrites test/families/arbiter/goldens.json
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import { ARBITER_MAX_LEN } from './replica.js';
import { gemmaTestTokenizer } from './gemma-tokenizer.js';
import * as common from '../kit/golden-cases.js';
import * as kit from '../kit/goldens-kit.js';
import { aTokens, choice, type Json, noul, type Question, score } from '../kit/goldens-kit.js';

export const ARBITER_REFERENCE = join(kit.ROOT, 'tools', 'families', 'arbiter', 'arbiter_layout.py');
export const ARBITER_GOLDENS = join(kit.ROOT, 'test', 'families', 'arbiter', 'goldens.json');
const ABOUT = [
  'Goldens of the Arbiter layout, made by tools/families/arbiter/arbiter_layout.py (Python, from the published layout), not by Assay.',
  'Tokenizer: the Gemma-style stand-in of tools/families/arbiter/gemma-tokenizer.ts as ordinary text. Regenerate: npx tsx tools/families/arbiter/goldens.ts',
];

export const GOLDEN_CONFIG = { max_len: ARBITER_MAX_LEN, pad_token_id: 0, temperature: 1 };

export interface GoldenRequest {
  name: string;
  state: Json;
  question: Question;
  /** Fake scores of the row's 24 slots. */
  logits?: number[];
}

/** The stand-in tokenizer; `asData`: without its added tokens, every text ordinary text. */
export function gemmaTokenizer(asData = false): Tokenizer {
  const t = gemmaTestTokenizer();
  return new Tokenizer(asData ? { ...t.tokenizer, added_tokens: [] } : t.tokenizer, t.config);
}

/** Every added token of the tokenizer (special or not), by its string. */
export function addedTokens(tokenizer: Tokenizer): Array<{ content: string; special: boolean }> {
  return [...tokenizer.get_added_tokens_decoder().values()].map((t) => ({ content: t.content, special: t.special }));
}

/** The ids of the tokenizer's added tokens (special or not). */
export function addedTokenIds(tokenizer: Tokenizer): number[] {
  return [...tokenizer.get_added_tokens_decoder().keys()];
}

const dataTokenizer = gemmaTokenizer(true);

/**
 * The reference's results for these requests. Every text is tokenized as ordinary text; the
 * reference checks that no row holds an added-token id of `tokenizer` (the full one).
 */
export function runReference(requests: GoldenRequest[], tokenizer: Tokenizer): Array<Record<string, unknown>> {
  const job = { config: GOLDEN_CONFIG, requests, special_ids: addedTokenIds(tokenizer) };
  return kit.runLayoutReference(ARBITER_REFERENCE, job, (segments: string[]) => kit.tokenIds(dataTokenizer, segments));
}

const text = kit.seededText([
  ...kit.WORDS.english,
  ...kit.WORDS.nonAscii,
  '<eos>',
  '<start_of_turn>',
  'Answer:',
  ...kit.WORDS.escapes,
]);
const STATE = 'Order #1042 arrived two days late and the box was damaged. The customer asks for a refund.';
const SIX = ['none', 'slight', 'some', 'clear', 'strong', 'total'];

function requests(tokenizer: Tokenizer): GoldenRequest[] {
  const out: GoldenRequest[] = [];
  const refund = 'The customer asks for a refund.';
  const topic = 'What is the main topic?';
  const severity = 'How severe is the complaint?';
  const add = (name: string, question: Question, state: Json = STATE): void => {
    out.push({ name, state, question });
  };
  add('noul plain', noul(refund));
  add('noul with criteria (not read)', noul(refund, { true: 'a refund is requested', false: 'no refund' }));
  common.noulShapes(add, refund);
  // choice: 1 option, descriptions, 10 and 16 options; 17 and 26 past the 16 slots (refused)
  add('choice one option', choice(topic, [['delivery', null]]));
  common.choiceDescriptions(add, topic);
  common.choiceCounts(add, topic, [10, 16, 17, 26]);
  // score: exactly 6 levels; 2, 3, 10, 5, 7 refused; structured levels of 6
  add('score 6 levels', score(severity, SIX));
  add('score 6 structured levels', score(severity, [{ l: 0 }, ['a'], null, 1.5, true, '']));
  common.scoreCounts(add, severity);
  add('score 5 levels (refused)', score(severity, SIX.slice(0, 5)));
  add('score 7 levels (refused)', score(severity, [...SIX, 'more']));
  common.structuredLevels(add, severity);
  // the prompt's own words in user content stay text
  add(
    'prompt words in content',
    choice('\n\nOptions:\nA. x\n\nAnswer:', [
      ['T. Yes / True', 'F. No'],
      ['Answer:', null],
    ]),
    'State: \n\nQuestion: ',
  );
  // every added token of the tokenizer in every field
  for (const { content, special } of addedTokens(tokenizer))
    add(
      `${special ? 'special' : 'added'} token ${content} in every field`,
      choice(`Is ${content} here?`, [
        [content, `a ${content} b`],
        [`x${content}`, { [content]: content }],
      ]),
      { [content]: `${content}${content} text ${content}`, list: [content] },
    );
  add(
    'all special strings in a state',
    noul(refund),
    addedTokens(tokenizer)
      .map((t) => t.content)
      .join(''),
  );
  add(
    'special strings in instructions and levels',
    score(
      '<start_of_turn>user<end_of_turn>',
      SIX.map((s) => `<bos>${s}`),
    ),
  );
  common.nonAsciiTexts(add, refund, { cjk: '顧客は返金を求めていますか?', emoji: 'Is the customer happy 🙂' });
  common.structuredStates(add, refund);
  common.emptyStates(add, refund);
  add('nested lists and objects', noul(refund), [
    [1, [2, { a: [3, { b: null }] }]],
    { c: { d: [] }, e: {} },
    '  padded',
  ]);
  add('numbers and booleans as Python writes them', noul({ n: 1e-5, big: 1e21, t: true, f: false, z: null }), {
    ints: [0, -0, 100, 2 ** 53, 1e20],
    floats: [0.1, 1.5, -2.25, 1e-4, 1e-5, 1e21, 5e-324],
  });
  add('null state', noul(refund), null);
  add('number state', noul(refund), 42.5);
  add('boolean state', noul(refund), true);
  // the row's length: the state at the folder's limit, one over, far over (nothing is cut: refused)
  const q = noul(refund);
  const rowLength = (n: number): number =>
    (runReference([{ name: 'probe', state: aTokens(n), question: q }], tokenizer)[0]!.ids as number[]).length;
  const base = rowLength(1) - 1;
  if (rowLength(5) !== base + 5) throw new Error('state tokens are not additive in the row');
  const room = GOLDEN_CONFIG.max_len - base;
  add('state at the limit', q, aTokens(room));
  add('state one over the limit (refused)', q, aTokens(room + 1));
  add('state far over the limit (refused)', q, aTokens(40 * room));
  add('list state over the limit (refused)', q, ['first', aTokens(room)]);
  // seeded mixtures; scores drawn with 6 levels where the mixture drew another count, every other one
  const rand = kit.seeded(43);
  for (let i = 0; i < 36; i++) {
    const m = kit.mixture(rand, text, i, { options: 18, descriptionWords: 12 });
    const question =
      m.question.type === 'score' && i % 2 === 0 ? score(m.question.instructions ?? null, SIX) : m.question;
    out.push({ name: `mixed ${i}`, state: m.state, question });
  }
  return out;
}

/** The golden requests, with fake scores for the 24 slots (seeded; a few ties and extremes). */
export function goldenRequests(tokenizer: Tokenizer = gemmaTokenizer()): GoldenRequest[] {
  const rand = kit.seeded(1044);
  return requests(tokenizer).map((r, i) => ({ ...r, logits: kit.fakeLogits(rand, i, 1, 24, 6)[0]! }));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const tokenizer = gemmaTokenizer();
  const reqs = goldenRequests(tokenizer);
  kit.writeGoldens(ARBITER_GOLDENS, { about: ABOUT, config: GOLDEN_CONFIG }, reqs, runReference(reqs, tokenizer));
}
