// The Kev pointer layout's goldens (development only, never packed): requests through the
// independent reference (tools/families/kev/kev_layout.py), tokenized by the Qwen3.5-id tokenizer
// (qwen35-tokenizer.ts), written to test/families/kev/goldens.json with each request's rows,
// positions, refusals and the readout of fake scores. The cases: golden-cases.ts' groups, and Kev's
// own: every added token of the tokenizer in every field, `<|…|>` look-alikes, render()'s corners
// (booleans, nulls, numbers, nested lists and objects, list items with leading spaces), 40 options,
// a state at, over and far over the 8,191-token cut, rows over the row limit (refused).
//
//   npx tsx tools/families/kev/goldens.ts
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import * as common from '../kit/golden-cases.js';
import * as kit from '../kit/goldens-kit.js';
import { aTokens, choice, type Json, noul, type Question, score } from '../kit/goldens-kit.js';
import { kevDecision, KEV_REPLICA_TEMPERATURES } from './replica.js';
import { qwen35Tokenizer } from '../kit/qwen35-tokenizer.js';

export const KEV_GOLDENS = join(kit.ROOT, 'test', 'families', 'kev', 'goldens.json');
const REFERENCE = join(kit.ROOT, 'tools', 'families', 'kev', 'kev_layout.py');

const ABOUT = [
  'Kev pointer layout goldens: made by tools/families/kev/goldens.ts from tools/families/kev/kev_layout.py',
  '(written from jaredpalmer/kev kev/api.py and kev/encoding.py), tokenized by the Qwen3.5-id tokenizer',
  '(tools/families/kit/qwen35-tokenizer.ts). Rows hold ids, decide and opts; readout: the fake scores calibrated.',
];

export interface KevGoldenRequest {
  name: string;
  state: Json;
  question: Question;
  scores?: number[];
}

/** The reference's job config: the replica's decision.json and temperatures. */
export function kevJobConfig(): Record<string, unknown> {
  const d = kevDecision();
  return {
    special_tokens: d.special_tokens,
    max_state: d.max_state_tokens,
    max_row: d.max_row_tokens,
    temperature: [...KEV_REPLICA_TEMPERATURES],
  };
}

export function kevTokenizer(): Tokenizer {
  const t = qwen35Tokenizer();
  return new Tokenizer(t.tokenizer, t.config);
}

/** Every added token of the tokenizer, by its string. */
export function addedTokens(): string[] {
  return (qwen35Tokenizer().tokenizer.added_tokens as Array<{ content: string }>).map((t) => t.content);
}

const text = kit.seededText([...kit.WORDS.english, ...kit.WORDS.nonAscii, ...kit.WORDS.escapes, '<|box_end|>']);

function requests(): Array<Omit<KevGoldenRequest, 'scores'>> {
  const out: Array<Omit<KevGoldenRequest, 'scores'>> = [];
  const state = 'The order arrived two days late and the box was damaged. I want a refund.';
  const add = (name: string, question: Question, s: Json = state): void => {
    out.push({ name, state: s, question });
  };
  const refund = 'Does the customer ask for a refund?';
  const topic = 'What is the main topic?';
  const severity = 'How severe is the issue?';

  add('noul plain', noul(refund));
  add('noul with criteria', noul(refund, { true: 'asks for money back', false: 'no refund asked' }));
  common.noulShapes(add, refund);
  add('choice one option', choice(topic, [['delivery', null]]));
  common.choiceDescriptions(add, topic);
  common.choiceCounts(add, topic, [3, 10, 26, 40, 255]);
  common.scoreCounts(add, severity);
  common.structuredLevels(add, severity);
  add('object state', noul(refund), { order: 1042, late_days: 2, damaged: true, note: null });
  add('array state', noul(refund), ['Hi, my order is late.', 'Sorry to hear that.']);
  common.specialStringStates(add, refund);
  common.lookAlikes(add, refund);
  common.nonAsciiTexts(add, refund, { cjk: '顧客は返金を求めていますか?', emoji: 'Is the customer happy?' });
  common.structuredStates(add, refund);
  common.emptyStates(add, refund);

  // every added token of the tokenizer, in every field
  const tokens = addedTokens();
  const all = tokens.join(' ');
  add('every added token in the state', noul(refund), `start ${all} end`);
  add('every added token in the instructions', noul(`Refund? ${all}`));
  add(
    'every added token as an option name and description',
    choice(
      topic,
      tokens.map((t, i) => [`${t}${i}`, i % 2 === 0 ? t : null]),
    ),
  );
  add('every added token in noul criteria', noul(refund, { true: all, false: tokens.slice(0, 5).join('') }));
  add('every added token as a score level', score(severity, tokens.slice(0, 10)));
  add('added tokens in an object state', noul(refund), { '<|fim_prefix|>': '<|box_start|>x<|box_end|>', list: tokens });
  add('delimiters glued to text', noul('<|fim_middle|>q<|fim_suffix|>'), 'a<|box_end|>b<|fim_prefix|>c');
  add('look-alikes of <|…|>', noul(refund), '<|a-b|> <|é|> <||> <| x |> <|box_end| |box_end|> <<|a|>|> <|a|b|>');
  add('a rewritten token that is a real name', noul(refund), '<¦box_end¦> and <|box_end|>');

  // render()'s corners
  add('booleans and null in an object', noul(refund), { yes: true, no: false, none: null, zero: 0 });
  add('numbers as Python writes them', noul(refund), {
    ints: [0, -7, 2 ** 53, 1e20],
    floats: [0.1, 1.5, -2.25, 1e-4, 1e-5, 1e16, 1e21, 5e-324],
  });
  add('list of lists and objects', noul(refund), [['a', ['b', 'c']], { k: 'v', deep: { x: [1, 2] } }, [], {}, null]);
  add('list items with leading spaces', noul(refund), [
    '  two spaces',
    '\n\tnewline tab',
    '\u3000ideographic',
    '\ufeffbom',
  ]);
  add('object with empty list and object values', noul(refund), { a: [], b: {}, c: [{}], d: '' });
  add('multi-line strings in a list', noul(refund), ['line one\nline two', 'x']);
  add(
    'object instructions',
    choice({ ask: 'topic?', langs: ['en', 'fr'] }, [
      ['a', null],
      ['b', { why: ['x'] }],
    ]),
  );
  add('list levels and object levels', score(severity, [['calm'], { label: 'some', n: 2 }, 'high']));
  add(
    'choice descriptions of numbers and booleans',
    choice(topic, [
      ['a', 'x'],
      ['b', ''],
      ['c', { n: 1.5, t: true }],
    ]),
  );

  // the state's cut: 8,191 tokens of state after <state>
  const cut = 8191;
  add('state at the cut', noul(refund), aTokens(cut));
  add('state one over the cut', noul(refund), aTokens(cut + 1));
  add(
    'state longer than the cut',
    choice(topic, [
      ['delivery', null],
      ['billing', 'invoices'],
    ]),
    aTokens(cut + 300),
  );
  add('object state over the cut', noul(refund), { text: aTokens(cut + 10) });
  // rows past the row limit (16,384: the state and a branch of up to 8,192): refused
  add(
    'branch over the row limit with a cut state (refused)',
    choice(topic, [
      ['long', aTokens(8200)],
      ['b', null],
    ]),
    aTokens(cut + 5),
  );
  add(
    'one option over the row limit (refused)',
    choice(topic, [
      ['a', null],
      ['b', aTokens(16400)],
    ]),
    'short',
  );
  add('branch fits beside a cut state', noul(refund), aTokens(cut + 5));

  // seeded mixtures
  const rand = kit.seeded(38);
  for (let i = 0; i < 32; i++) {
    const { question, state: s } = kit.mixture(rand, text, i, { options: 40, descriptionWords: 20 });
    out.push({ name: `mixed ${i}`, state: s, question });
  }
  return out;
}

/** The golden requests with fake scores (one per option; seeded, a few ties and extremes). */
export function kevGoldenRequests(): KevGoldenRequest[] {
  const rand = kit.seeded(1038);
  return requests().map((r, i) => {
    const k = r.question.type === 'noul' ? 2 : kit.criteriaCount(r.question);
    return { ...r, scores: kit.fakeLogits(rand, i, 1, k, 6)[0]! };
  });
}

/** The reference's results for `reqs`. */
export function runKevReference(reqs: KevGoldenRequest[], tokenizer = kevTokenizer()): Array<Record<string, unknown>> {
  return kit.runLayoutReference<string[]>(REFERENCE, { config: kevJobConfig(), requests: reqs }, (segments) =>
    kit.tokenIds(tokenizer, segments),
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const reqs = kevGoldenRequests();
  const results = runKevReference(reqs);
  const cut = results.filter((r) => r.truncated).length;
  kit.writeGoldens(KEV_GOLDENS, { about: ABOUT, config: kevJobConfig() }, reqs, results, `, ${cut} with the state cut`);
}
