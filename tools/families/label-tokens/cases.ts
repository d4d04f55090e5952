// The requests of the label-token contracts' goldens (development only, never packed), per test
// contract: golden-cases.ts' groups for the question types the contract answers (a state case asks
// the contract's own type where it has no noul), a question of each type it lacks (refused
// "type"), the option counts around its limits (10, 26, the letter table's two-letter labels,
// max_options and one more), the score table's size and one more, a state at and past
// state_tokens, numbers whose Python and JavaScript spellings differ, null / absent / structured
// instructions, every added token of the tokenizer in every field, and seeded mixtures. A choice's
// criteria are an object in the caller's order, so option names are never integer-like (an object
// would reorder those).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { addedTokenStrings, dataTokenizer } from '../decider/goldens.js';
import * as common from '../kit/golden-cases.js';
import * as kit from '../kit/goldens-kit.js';
import { aTokens, choice, type Json, letters, noul, type Question, score } from '../kit/goldens-kit.js';

export interface LabelGoldenRequest {
  name: string;
  state: Json;
  /** [question id, wire question] in the order sent; a choice's criteria an object in the caller's order. */
  questions: Array<[string, Question]>;
}

const TOPIC = 'What is the main topic of the message?';
const SEVERITY = 'How severe is the problem?';
const REFUND = 'Does the customer ask for a refund?';
const STATE = 'Order 1042 arrived two days late and the box was damaged. I would like my money back.';
/** Numbers whose Python json.dumps and JavaScript spellings differ (-0 travels as 0 in JSON). */
const NUMBERS: Json = {
  big: 1e20,
  huge: 1e21,
  one: 1.0,
  negzero: -0,
  tenth: 0.1,
  fifth: 0.00001,
  small: 1e-7,
  neg: -2.5e-8,
  pi: Math.PI,
  list: [1.5, 100, 1e300, 123456.789e3],
};

/** A wire question: a choice's [name, description] pairs as an object (names never integer-like). */
function wire(q: Question): Question {
  if (q.type !== 'choice' || !Array.isArray(q.criteria)) return q;
  const pairs = q.criteria as Array<[string, Json]>;
  for (const [n] of pairs) if (/^(0|[1-9]\d*)$/.test(n)) throw new Error(`integer-like option name ${n}`);
  const criteria = Object.fromEntries(pairs) as Json;
  if (Object.keys(criteria as object).length !== pairs.length) throw new Error('duplicate option names');
  return { ...q, criteria };
}

interface Shape {
  types: string[];
  /** The most options of a choice (min(max_options, the choice table's length)). */
  maxOptions: number;
  /** The score table's length. */
  scoreLabels: number;
  stateTokens: number;
  /** render: "json". */
  json: boolean;
}

/** What the cases need of a contract: its types and limits (the letter table counted on the tokenizer). */
function shapeOf(contract: string, dir: string): Shape {
  const file = join(kit.ROOT, 'test', 'families', 'label-tokens', 'contracts', `${contract}.json`);
  const c = (
    JSON.parse(readFileSync(file, 'utf8')) as {
      contract: {
        types?: string[];
        render?: string;
        max_options?: number;
        state_tokens?: number;
        labels?: Record<string, unknown>;
      };
    }
  ).contract;
  const labels: Record<string, unknown> = { choice: 'letters', score: 'digits', ...(c.labels ?? {}) };
  const tok = dataTokenizer(dir);
  const size = (t: unknown): number => {
    if (t === 'digits') return 10;
    if (Array.isArray(t)) return t.length;
    const az = letters(26);
    const two = az.flatMap((a) => az.map((b) => a + b));
    return Math.min(255, 26 + two.filter((s) => tok.encode(s, { add_special_tokens: false }).ids.length === 1).length);
  };
  const table = size(labels.choice);
  return {
    types: c.types ?? ['choice', 'noul', 'score'],
    maxOptions: Math.min(table, c.max_options ?? table),
    scoreLabels: size(labels.score),
    stateTokens: c.state_tokens ?? 32768,
    json: c.render === 'json',
  };
}

export function labelTokenRequests(contract: string, dir: string): LabelGoldenRequest[] {
  const shape = shapeOf(contract, dir);
  const has = (t: string) => shape.types.includes(t);
  const requests: LabelGoldenRequest[] = [];
  const many = (name: string, state: Json, questions: Array<[string, Question]>) =>
    requests.push({ name, state, questions: questions.map(([k, q]) => [k, wire(q)]) });
  const add: common.AddCase = (name, question, state = STATE) => many(name, state, [['q', question]]);
  /** The contract's probe for state cases: a noul, or a choice where it answers no noul. */
  const probe = (instructions: string): Question =>
    has('noul')
      ? noul(instructions)
      : choice(instructions, [
          ['refund', 'asks for money back'],
          ['no refund', null],
          ['unclear', ''],
        ]);
  const stateCase: common.AddCase = (name, q, state) =>
    add(name, q.type === 'noul' && !has('noul') ? probe(String(q.instructions)) : q, state);

  // The question types the contract lacks: refused "type".
  if (!has('choice'))
    add(
      'choice, a type the contract lacks',
      choice(TOPIC, [
        ['delivery', null],
        ['billing', 'invoices'],
      ]),
    );
  if (!has('score')) add('score, a type the contract lacks', score(SEVERITY, ['low', 'high']));
  if (!has('noul')) add('noul, a type the contract lacks', noul(REFUND, { true: 'money back' }));

  if (has('noul')) {
    common.noulShapes(add, REFUND);
    add('noul both sides described', noul(REFUND, { true: 'asks for money back', false: 'keeps the item' }));
    add('noul false side only, true empty', noul(REFUND, { true: '', false: 'keeps the item' }));
    add('noul without criteria, empty instructions', noul(''));
    add('noul criteria falsy but described', noul(REFUND, { true: 0, false: false }));
    add('noul instructions unicode object', noul({ frage: 'Rückerstattung?', 質問: '返金', emoji: '💸' }));
  }
  if (has('choice')) {
    common.choiceDescriptions((name, q, s) => {
      if (!name.includes('integer-like')) add(name, q, s);
    }, TOPIC);
    const counts = [3, 10, 11, 26, 27, 40, 64, shape.maxOptions, shape.maxOptions + 1].filter(
      (n, i, xs) => n <= shape.maxOptions + 1 && xs.indexOf(n) === i,
    );
    common.choiceCounts(
      add,
      TOPIC,
      counts.sort((a, b) => a - b),
    );
    add(
      'choice empty option name',
      choice(TOPIC, [
        ['', 'nameless'],
        ['named', null],
        [' ', null],
      ]),
    );
    add(
      'choice instructions null',
      choice(null, [
        ['a', null],
        ['b', null],
      ]),
    );
    add('choice instructions absent', {
      type: 'choice',
      criteria: [
        ['a', 'first'],
        ['b', ''],
      ],
    });
    add(
      'choice instructions empty',
      choice('', [
        ['a', null],
        ['b', 'second'],
      ]),
    );
    add(
      'choice instructions object',
      choice({ ask: 'topic', of: ['message', 'ticket'] }, [
        ['x', 'ex'],
        ['y', null],
      ]),
    );
    add(
      'choice numbers in descriptions',
      choice(TOPIC, [
        ['late', NUMBERS],
        ['early', [0.00001, 1e-7, -0]],
        ['none', 1e21],
      ]),
    );
    add(
      'choice CJK names, emoji descriptions',
      choice('どれ?', [
        ['配送', '🚚 late'],
        ['請求', '💳'],
        ['製品', null],
      ]),
    );
  }
  if (has('score')) {
    common.scoreCounts((name, q, s) => {
      if (kit.criteriaCount(q) <= shape.scoreLabels) add(name, q, s);
    }, SEVERITY);
    const n = shape.scoreLabels;
    if (n < 10) {
      const levels = (k: number) => Array.from({ length: k }, (_, i) => `level ${i + 1}`);
      add(`score ${n} levels, the score table`, score(SEVERITY, levels(n)));
      add(`score ${n + 1} levels, past the score table`, score(SEVERITY, levels(n + 1)));
    }
    common.structuredLevels(add, SEVERITY);
    add('score instructions null, empty level', score(null, ['', 'some', 'much']));
    add('score numbers and unicode in levels', score({ scale: [1.0, 1e21] }, [1e20, { p: 0.00001 }, 'très élevé 🔥']));
  }

  // State cases (each asks the contract's own type where it has no noul).
  common.specialStringStates(stateCase, REFUND);
  common.lookAlikes(stateCase, REFUND);
  common.nonAsciiTexts(stateCase, REFUND, { cjk: '返金を求めていますか?', emoji: 'Is the customer happy?' });
  common.structuredStates(stateCase, REFUND);
  common.emptyStates(stateCase, REFUND);
  add('numbers in state', probe(REFUND), NUMBERS);
  add('numbers in instructions', has('noul') ? noul({ limit: 1e-7, max: 1e21, ratio: 0.1, n: 1.0 }) : probe(REFUND));
  add('unicode and escapes in state object', probe(REFUND), {
    clé: 'naïve 注文 🙂',
    q: '"quoted" <tag> \\ \t',
    rtl: 'مرحبا',
  });

  add('integer-like keys in a state object (sent in JavaScript’s order)', probe(REFUND), {
    b: 'bee',
    '10': 'ten',
    '2': 'two',
    a: [{ '1': true, z: null }],
  });
  add('state with angle brackets and markup', probe(REFUND), '<p>a < b && c > d</p> <|not a token|> <<think>>');

  // The state at and past state_tokens (a state past the model's context is refused "context").
  const cut = shape.stateTokens;
  if (cut <= 4096) {
    // "a a … a" is one token a word; rendered as JSON its quotes add one token.
    const exact = cut - (shape.json ? 1 : 0);
    add('state of exactly state_tokens', probe(REFUND), aTokens(exact));
    add('state one token past state_tokens (cut)', probe(REFUND), aTokens(exact + 1));
    add('state past state_tokens (cut)', probe(REFUND), aTokens(cut + 100));
    add('object state past state_tokens (cut)', probe(REFUND), { text: aTokens(cut + 50) });
  } else add('state past state_tokens and the context', probe(REFUND), aTokens(cut + 300));

  // Every added token of the tokenizer in every field.
  for (const s of addedTokenStrings(dir)) {
    const qs: Array<[string, Question]> = [];
    if (has('noul')) qs.push(['noul', noul(`Is ${s} here?`, { true: `yes ${s}`, false: s })]);
    if (has('choice'))
      qs.push([
        'choice',
        choice(`${s} topic?`, [
          [s, null],
          ['b', `desc ${s}`],
          [`c${s}d`, { [s]: s }],
        ]),
      ]);
    if (has('score')) qs.push(['score', score(`rate ${s}`, [`1: ${s}`, s, { k: s }])]);
    many(`added token ${s} in every field`, `before ${s} after ${s}${s}`, qs);
  }

  // Several questions, in the order sent; one refused refuses the request.
  const several: Array<[string, Question]> = [];
  if (has('score')) several.push(['z-last', score(SEVERITY, ['none', 'some', 'much'])]);
  if (has('choice'))
    several.push([
      'a-first',
      choice(
        TOPIC,
        letters(12).map((l) => [l, `topic ${l}`]),
      ),
    ]);
  if (has('noul')) several.push(['m', noul(REFUND)]);
  many('several questions, the order sent', { ticket: STATE, lines: letters(5) }, several);
  many('several questions, one refused', STATE, [
    ...several.slice(0, 1),
    ['bad', has('choice') ? choice(TOPIC, [['only', null]]) : score(SEVERITY, ['a', 'b'])],
  ]);

  // Seeded mixtures of the contract's types.
  const rand = kit.seeded(3838 + contract.length);
  const text = kit.seededText([...kit.WORDS.english, ...kit.WORDS.nonAscii, ...kit.WORDS.escapes]);
  for (let i = 0, made = 0; made < 12; i++) {
    const { question, state } = kit.mixture(rand, text, i, {
      options: Math.min(40, shape.maxOptions),
      descriptionWords: 6,
    });
    if (!has(question.type) || (question.type === 'score' && kit.criteriaCount(question) > shape.scoreLabels)) continue;
    add(`mixture ${i}`, question, state);
    made++;
  }
  return requests;
}
