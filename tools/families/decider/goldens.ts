// Goldens of the decider-labels layout, made by the independent Python reference
// (tools/families/decider/decider_layout.py), never by Assay's TypeScript: the requests below
// (deterministic), tokenized where the reference asks for it by the replica's Qwen tokenizer taken
// as ordinary text (tokenizer.json without its added tokens: Assay's content-is-data rule, so no
// caller text can hold a control token), laid out and read out (fake label logits) by the reference.
// test/families/decider-layout.test.ts holds the TypeScript to them.
//
//   npx tsx tools/families/decider/goldens.ts    rewrites test/families/decider/goldens.json
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import * as common from '../kit/golden-cases.js';
import * as kit from '../kit/goldens-kit.js';
import { aTokens, choice, type Json, letters, noul, type Question, score } from '../kit/goldens-kit.js';
import { DECIDER_TEMPERATURE, ensureDeciderReplica } from './replica.js';

export const DECIDER_REFERENCE = join(kit.ROOT, 'tools', 'families', 'decider', 'decider_layout.py');
export const DECIDER_GOLDENS = join(kit.ROOT, 'test', 'families', 'decider', 'goldens.json');
/** `assay calibrate`'s temperatures the goldens' readout applies on top of the family's. */
export const GOLDEN_ANSWER_TEMPERATURE = { choice: 1.3, score: 0.8, noul: 1.1 };
const ABOUT = [
  'Goldens of the decider-labels layout, made by tools/families/decider/decider_layout.py (Python, from the published rules), not by Assay.',
  'Tokenizer: the replica’s Qwen tokenizer as ordinary text. Regenerate: npx tsx tools/families/decider/goldens.ts',
];

export interface GoldenRequest {
  name: string;
  state: Json;
  /** [question id, question] in the order sent; choice criteria as [name, description] pairs. */
  questions: Array<[string, Question]>;
  /** Fake label logits, one list per row (its labels). */
  label_logits?: number[][];
}

/** The replica's tokenizer.json and tokenizer_config.json. */
export function replicaTokenizerFiles(dir: string): { json: Record<string, unknown>; config: Record<string, unknown> } {
  return {
    json: JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as Record<string, unknown>,
    config: JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>,
  };
}

/** The tokenizer with no added tokens: every text tokenized as ordinary text. */
export function dataTokenizer(dir: string): Tokenizer {
  const { json, config } = replicaTokenizerFiles(dir);
  return new Tokenizer({ ...json, added_tokens: [] }, config);
}

/** Every added token's string (special or not). */
export function addedTokenStrings(dir: string): string[] {
  const { json } = replicaTokenizerFiles(dir);
  return (json.added_tokens as Array<{ content: string }>).map((t) => t.content);
}

const TOPIC = 'What is the main topic of the message?';
const SEVERITY = 'How severe is the problem?';
const REFUND = 'Does the customer ask for a refund?';
const STATE = 'Order 1042 arrived two days late and the box was damaged. I would like my money back.';

export function goldenRequests(dir: string): GoldenRequest[] {
  const requests: GoldenRequest[] = [];
  const add = (name: string, question: Question, state: Json = STATE) =>
    requests.push({ name, state, questions: [['q', question]] });
  // The cases of the encoder families' goldens.
  common.noulShapes(add, REFUND);
  common.choiceDescriptions(add, TOPIC);
  common.choiceCounts(add, TOPIC, [3, 9, 10, 11, 26, 27, 40, 100, 229, 255, 256]);
  common.scoreCounts(add, SEVERITY);
  common.structuredLevels(add, SEVERITY);
  common.specialStringStates(add, REFUND);
  common.lookAlikes(add, REFUND);
  common.nonAsciiTexts(add, REFUND, { cjk: '返金を求めていますか?', emoji: 'Is the customer happy?' });
  common.structuredStates(add, REFUND);
  common.emptyStates(add, REFUND);
  // The decider's own: instructions, noul without instructions, score level numbers, annotation, the cut.
  add(
    'choice instructions null',
    choice(null, [
      ['a', null],
      ['b', null],
    ]),
  );
  add(
    'choice instructions empty',
    choice('', [
      ['a', null],
      ['b', null],
    ]),
  );
  add('choice instructions absent', {
    type: 'choice',
    criteria: [
      ['a', null],
      ['b', null],
    ],
  });
  add('score instructions object', score({ ask: 'severity', scale: [0, 1, 2] }, ['low', 'mid', 'high']));
  add('noul absent instructions, true described', { type: 'noul', criteria: { true: 'asks for money back' } });
  add('noul null instructions, false described', noul(null, { false: 'no refund wanted', true: null }));
  add('noul empty instructions, nothing described', noul('', { true: '', false: null }));
  add('noul criteria false only', noul(REFUND, { false: 'keeps the item' }));
  add(
    'score level numbers',
    score(SEVERITY, ['0: none', '1 : minor', ' 2:serious', '-3: worse', '4:', '5: 6: nested']),
  );
  add(
    'score level numbers, unicode spaces and digits',
    score(SEVERITY, [
      '\u3000٣: arabic-indic three',
      '\u001c7: file separator',
      '\u00a08\u2003:\u2028x',
      '\ufeff9: bom',
      'x: 1',
    ]),
  );
  add('score level number only', score(SEVERITY, ['3: ', '7']));
  add('score structured levels with numbers', score(SEVERITY, [{ '0': 'none' }, ['1: some'], 2]));
  const eight = Array.from({ length: 8 }, (_, i) => ({ id: i, text: `turn ${i}` }));
  add('state list of 8 objects annotated', noul(REFUND), eight);
  add('state list of 7 objects not annotated', noul(REFUND), eight.slice(0, 7));
  add('state list of 8 strings annotated', noul(REFUND), letters(8));
  add('state list of 8 mixed', noul(REFUND), [1, 'two', null, true, [3], { a: 1 }, 2.5, []]);
  add(
    'state elements with their own _index and integer-like keys',
    noul(REFUND),
    Array.from(
      { length: 9 },
      (_, i) => (i % 2 ? { _index: `own ${i}`, '7': 'seven', b: i } : { '10': i, z: 'last' }) as Json,
    ),
  );
  add('state nested long lists', noul(REFUND), {
    log: { events: Array.from({ length: 10 }, (_, i) => [i, letters(8)]) },
  });
  add('state longer than the context cut', noul(REFUND), aTokens(33_000));
  add(
    'object state longer than the context cut',
    choice(TOPIC, [
      ['a', null],
      ['b', 'bee'],
      ['c', null],
    ]),
    {
      text: aTokens(34_000),
    },
  );
  add('state just under the cut', noul(REFUND), aTokens(32_700));
  // Special-token strings in every field, one request per added token.
  for (const s of addedTokenStrings(dir))
    requests.push({
      name: `added token ${s} in every field`,
      state: `before ${s} after ${s}${s}`,
      questions: [
        ['noul', noul(`Is ${s} here?`, { true: `yes ${s}`, false: s })],
        [
          'choice',
          choice(`${s} topic?`, [
            [`${s}`, null],
            ['b', `desc ${s}`],
            [`c${s}d`, { [s]: s }],
          ]),
        ],
        ['score', score(`rate ${s}`, [`0: ${s}`, s, { k: s }])],
      ],
    });
  requests.push({
    name: 'several questions, the order sent',
    state: { ticket: STATE, lines: letters(12) },
    questions: [
      ['z-last', score(SEVERITY, ['none', 'some', 'much'])],
      [
        'a-first',
        choice(
          TOPIC,
          letters(12).map((l) => [l, `topic ${l}`]),
        ),
      ],
      ['m', noul(REFUND)],
    ],
  });
  requests.push({
    name: 'several questions, one refused',
    state: STATE,
    questions: [
      ['ok', noul(REFUND)],
      ['one', choice(TOPIC, [['only', null]])],
    ],
  });
  // Seeded mixtures.
  const rand = kit.seeded(38);
  const text = kit.seededText([...kit.WORDS.english, ...kit.WORDS.nonAscii, ...kit.WORDS.escapes]);
  for (let i = 0; i < 40; i++) {
    const { question, state } = kit.mixture(rand, text, i, { options: 40, descriptionWords: 6 });
    add(`mixture ${i}`, question, state);
  }
  // Fake label logits: one list per row, as many as its labels.
  const logits = kit.seeded(3838);
  requests.forEach((r, i) => {
    const widths = r.questions.flatMap(([, q]) =>
      q.type === 'score'
        ? kit.criteriaCount(q) > 0
          ? Array(kit.criteriaCount(q)).fill(2)
          : []
        : [q.type === 'noul' ? 2 : kit.criteriaCount(q)],
    );
    r.label_logits = widths.map((w) => kit.fakeLogits(logits, i, 1, Math.max(w, 1), 4)[0]!);
  });
  return requests;
}

/** The reference's results for requests, tokenized by the replica's tokenizer as data. */
export function referenceResults(dir: string, requests: GoldenRequest[]): { results: Array<Record<string, unknown>> } {
  const tok = dataTokenizer(dir);
  const job = { requests, temperature: DECIDER_TEMPERATURE, answer_temperature: GOLDEN_ANSWER_TEMPERATURE };
  return { results: kit.runLayoutReference<string[]>(DECIDER_REFERENCE, job, (texts) => kit.tokenIds(tok, texts)) };
}

async function main(): Promise<void> {
  const dir = await ensureDeciderReplica();
  const requests = goldenRequests(dir);
  const { results } = referenceResults(dir, requests);
  kit.writeGoldens(
    DECIDER_GOLDENS,
    { about: ABOUT, temperature: DECIDER_TEMPERATURE, answer_temperature: GOLDEN_ANSWER_TEMPERATURE },
    requests,
    results,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
