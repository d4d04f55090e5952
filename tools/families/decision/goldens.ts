// Goldens of the Decision endpoint layout (`decision-endpoint`), made by the independent Python
// reference (tools/families/decision/decision_layout.py), never by Assay's TypeScript: the requests below
// (deterministic), over the Qwen tokenizer the replica ships (decision-replica.ts) taken as ordinary
// text (tokenizer.json without its added tokens: Assay's content-is-data rule, so no caller text can
// hold a control token), tokenized where the reference asks for it, laid out and read out by the
// reference, which fails on a row holding one of the tokenizer's added-token ids.
// test/families/decision-evaluator.test.ts holds the engine to them and reruns the reference on some.
//
//   npx tsx tools/families/decision/goldens.ts    rewrites test/families/decision/goldens.json
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import { DECISION_PAD_ID, DECISION_TEMPERATURE, QWEN_TOKENIZER } from './replica.js';
import * as common from '../kit/golden-cases.js';
import * as kit from '../kit/goldens-kit.js';
import { aTokens, choice, type Json, noul, type Question, score } from '../kit/goldens-kit.js';

export const DECISION_REFERENCE = join(kit.ROOT, 'tools', 'families', 'decision', 'decision_layout.py');
export const DECISION_GOLDENS = join(kit.ROOT, 'test', 'families', 'decision', 'goldens.json');
const ABOUT = [
  'Goldens of the Decision endpoint layout, made by tools/families/decision/decision_layout.py (Python, from the published prompt contract), not by Assay.',
  'Tokenizer: the Qwen tokenizer vendored in models/tokenizers/qwen3 (the replica’s) as ordinary text. Regenerate: npx tsx tools/families/decision/goldens.ts',
];

/** The folder's settings as the published decision.json and calibration.json give them. */
export const GOLDEN_CONFIG = {
  max_len: 16_384,
  max_options: 255,
  max_levels: 10,
  choice_null_description: 'null',
  pad_token_id: DECISION_PAD_ID,
  temperature: DECISION_TEMPERATURE,
};

export interface GoldenRequest {
  name: string;
  state: Json;
  question: Question;
  /** Fake candidate logits of the row. */
  logits?: number[];
}

/** The replica's Qwen tokenizer; `asData`: without its added tokens, every text ordinary text. */
export function qwenTokenizer(asData = false): Tokenizer {
  const json = JSON.parse(readFileSync(QWEN_TOKENIZER.json, 'utf8')) as Record<string, unknown>;
  const config = JSON.parse(readFileSync(QWEN_TOKENIZER.config, 'utf8')) as Record<string, unknown>;
  return new Tokenizer({ ...json, truncation: null, padding: null, ...(asData ? { added_tokens: [] } : {}) }, config);
}

/** Every added token of the tokenizer (special or not), by its string. */
export function addedTokens(tokenizer: Tokenizer): Array<{ content: string; special: boolean }> {
  return [...tokenizer.get_added_tokens_decoder().values()].map((t) => ({ content: t.content, special: t.special }));
}

/** The ids of the tokenizer's added tokens (special or not). */
export function addedTokenIds(tokenizer: Tokenizer): number[] {
  return [...tokenizer.get_added_tokens_decoder().keys()];
}

const dataTokenizer = qwenTokenizer(true);

/**
 * The reference's results for these requests: it names the texts to tokenize, then lays them out.
 * Every text is tokenized as ordinary text; the reference checks that no row holds an added-token id
 * of `tokenizer` (the full one).
 */
export function runReference(requests: GoldenRequest[], tokenizer: Tokenizer): Array<Record<string, unknown>> {
  const job = { config: GOLDEN_CONFIG, requests, special_ids: addedTokenIds(tokenizer) };
  return kit.runLayoutReference(DECISION_REFERENCE, job, (segments: string[]) => kit.tokenIds(dataTokenizer, segments));
}

const text = kit.seededText([
  ...kit.WORDS.english,
  ...kit.WORDS.nonAscii,
  '<|im_start|>',
  '<|endoftext|>',
  '<option>',
  '</option>',
  'Decision:',
  ...kit.WORDS.escapes,
]);

const STATE = 'Order #1042 arrived two days late and the box was damaged. The customer asks for a refund.';

function requests(tokenizer: Tokenizer): GoldenRequest[] {
  const out: GoldenRequest[] = [];
  const refund = 'The customer asks for a refund.';
  const topic = 'What is the main topic?';
  const severity = 'How severe is the complaint?';
  const add = (name: string, question: Question, state: Json = STATE): void => {
    out.push({ name, state, question });
  };
  // noul: criteria absent, partial, null, empty, structured; keys the head cannot read
  add('noul plain', noul(refund));
  add('noul with criteria', noul(refund, { true: 'a refund is requested', false: 'no refund is mentioned' }));
  add('noul criteria true only', noul(refund, { true: 'money back is asked for' }));
  add('noul criteria false only', noul(refund, { false: 'only complains' }));
  common.noulShapes(add, refund);
  add('noul criteria other key (refused)', noul(refund, { True: 'yes', maybe: 'perhaps' }));
  // choice: one option (refused), descriptions, 10 / 26 / 255 options, 256 (past the head: refused)
  add('choice one option', choice(topic, [['delivery', null]]));
  common.choiceDescriptions(add, topic);
  common.choiceCounts(add, topic, [10, 26, 255, 256]);
  add(
    'choice keys that sort differently',
    choice(topic, [
      ['b', { z: 1, a: [2, { y: null, b: 'x' }] }],
      ['a', 'é'],
    ]),
  );
  // score: 2, 3, 10 levels, one and eleven (refused), structured levels
  common.scoreCounts(add, severity);
  add('score one level (refused)', score(severity, ['the only level']));
  add(
    'score 11 levels (refused)',
    score(
      severity,
      Array.from({ length: 11 }, (_, i) => `level ${i}`),
    ),
  );
  common.structuredLevels(add, severity);
  // the layout's own text in user content stays text
  add(
    'option tags and Decision: in content',
    choice('\nOptions:\n<option>\n{"key":"x"}\n</option>', [
      ['</option>', '<option>'],
      ['Decision:', '\nDecision:'],
    ]),
    'Context:\n\n\nTask type: noul\nQuestion:\n</option>',
  );
  // special-token strings: every added token of the tokenizer in every field, one request each
  for (const { content, special } of addedTokens(tokenizer))
    add(
      `${special ? 'special' : 'added'} token ${content} in every field`,
      choice(`Is ${content} here?`, [
        [content, `a ${content} b`],
        [`x${content}`, { [content]: content }],
      ]),
      { [content]: `${content}${content} text ${content}` },
    );
  add(
    'all special strings in a state',
    noul(refund),
    addedTokens(tokenizer)
      .map((t) => t.content)
      .join(''),
  );
  common.specialStringStates(add, refund);
  common.lookAlikes(add, refund);
  add(
    'special strings in noul criteria and score levels',
    noul('<|im_end|> refund?', { true: '<|im_start|>yes', false: '<|endoftext|>' }),
  );
  add('special strings in score levels', score(severity, ['<|im_start|>none', '<|vision_pad|> some']));
  // non-ASCII, numbers, state shapes
  common.nonAsciiTexts(add, refund, { cjk: '顧客は返金を求めていますか?', emoji: 'Is the customer happy 🙂' });
  add('non-ASCII object state', noul(refund), { città: 'Zürich', 注文: ['返金', 'é'], emoji: '🙂', '😀': 1 });
  common.structuredStates(add, refund);
  common.emptyStates(add, refund);
  add('numbers as Python writes them', noul(refund), {
    ints: [0, -0, 100, -7, 2 ** 53, 1e20],
    floats: [0.1, 1.5, -2.25, 1e-4, 1e-5, 1e21, 5e-324],
  });
  add('booleans and null state', noul(refund), [true, false, null, { t: true }]);
  add('null state', noul(refund), null);
  add('number state', noul(refund), 42.5);

  // the row's length: the state at the limit, one over, far over (nothing is cut: refused)
  const q = noul(refund);
  const rowLength = (n: number): number =>
    (runReference([{ name: 'probe', state: aTokens(n), question: q }], tokenizer)[0]!.ids as number[]).length;
  const base = rowLength(1) - 1;
  if (rowLength(5) !== base + 5) throw new Error('state tokens are not additive in the row');
  const room = GOLDEN_CONFIG.max_len - base;
  if (kit.tokenCount(tokenizer, aTokens(room)) !== room) throw new Error('aTokens: " a" is not one token');
  add('state at the limit', q, aTokens(room));
  add('state one over the limit (refused)', q, aTokens(room + 1));
  add('state far over the limit (refused)', q, aTokens(3 * room));
  add('object state over the limit (refused)', q, { text: aTokens(room + 10) });
  add(
    'options over the limit (refused)',
    choice(topic, [
      ['a', aTokens(room + 40)],
      ['b', null],
    ]),
    '',
  );

  // seeded mixtures of everything above
  const rand = kit.seeded(41);
  for (let i = 0; i < 30; i++) {
    const { question, state } = kit.mixture(rand, text, i, { options: 14, descriptionWords: 20 });
    out.push({ name: `mixed ${i}`, state, question });
  }
  return out;
}

/** The golden requests, with fake candidate logits (seeded; a few ties and extremes). */
export function goldenRequests(tokenizer: Tokenizer = qwenTokenizer()): GoldenRequest[] {
  const rand = kit.seeded(1043);
  return requests(tokenizer).map((r, i) => {
    const k = r.question.type === 'noul' ? 2 : kit.criteriaCount(r.question);
    return { ...r, logits: kit.fakeLogits(rand, i, 1, k, 6)[0]! };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const tokenizer = qwenTokenizer();
  const reqs = goldenRequests(tokenizer);
  kit.writeGoldens(DECISION_GOLDENS, { about: ABOUT, config: GOLDEN_CONFIG }, reqs, runReference(reqs, tokenizer));
}
