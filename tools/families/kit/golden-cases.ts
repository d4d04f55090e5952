// The cases both encoder layouts' goldens hold (development only, never packed), in groups a
// family's generator adds among its own cases, `common.noulShapes(add, refund)`: the goldens'
// order and names are part of the files, so a group is a run of cases that stands in both
// families' lists in the same order. Used by laya-goldens.ts and nli-goldens.ts.
import { choice, type Json, letters, noul, type Question, score } from './goldens-kit.js';

/** Adds a case: its name, its question and (where it is not the family's default) its state. */
export type AddCase = (name: string, question: Question, state?: Json) => void;

/** noul: criteria null, empty, structured; instructions structured, null, absent. */
export function noulShapes(add: AddCase, instructions: string): void {
  add('noul criteria null', noul(instructions, null));
  add('noul criteria values null', noul(instructions, { true: null, false: null }));
  add('noul criteria empty strings', noul(instructions, { true: '', false: '' }));
  add(
    'noul criteria object',
    noul(instructions, { true: { signal: 'refund', strength: 2 }, false: { signal: 'none' } }),
  );
  add('noul criteria array', noul(instructions, { true: ['refund', 'money back'], false: [] }));
  add('noul instructions object', noul({ question: 'refund?', context: ['email', 'chat'], weight: 0.5 }));
  add('noul instructions array', noul(['is it late?', 'is it damaged?']));
  add('noul instructions null', noul(null));
  add('noul instructions absent', { type: 'noul' });
}

/** choice: one option described, descriptions null / "" / text / structured, integer-like names, duplicates. */
export function choiceDescriptions(add: AddCase, topic: string): void {
  add('choice one option, described', choice(topic, [['delivery', 'shipping, delays, damage']]));
  add(
    'choice two options',
    choice(topic, [
      ['delivery', 'shipping'],
      ['billing', 'invoices'],
    ]),
  );
  add(
    'choice null / empty / text',
    choice(topic, [
      ['delivery', null],
      ['billing', ''],
      ['product', 'the item itself'],
    ]),
  );
  add(
    'choice object and array descriptions',
    choice(topic, [
      ['a', { when: 'late', score: 1.5 }],
      ['b', ['x', 'y']],
      ['c', {}],
    ]),
  );
  add(
    'choice integer-like names keep their order',
    choice(topic, [
      ['10', 'ten'],
      ['2', 'two'],
      ['1', null],
      ['b', 'bee'],
    ]),
  );
  add(
    'choice duplicate descriptions',
    choice(topic, [
      ['x', 'same'],
      ['y', 'same'],
      ['z', 'same'],
    ]),
  );
}

/** choice with `n` options, a third of them without a description. */
export function choiceCounts(add: AddCase, topic: string, counts: number[]): void {
  for (const n of counts)
    add(
      `choice ${n} options`,
      choice(
        topic,
        letters(n).map((l, i) => [l, i % 3 === 0 ? null : `option ${l}`]),
      ),
    );
}

/** score: 2, 3 and 10 levels. */
export function scoreCounts(add: AddCase, severity: string): void {
  add('score 2 levels', score(severity, ['no issue', 'an issue']));
  add('score 3 levels', score(severity, ['no issue', 'minor', 'serious']));
  add(
    'score 10 levels',
    score(
      severity,
      Array.from({ length: 10 }, (_, i) => `severity ${i} of 9`),
    ),
  );
}

/** score: levels that are objects and lists. */
export function structuredLevels(add: AddCase, severity: string): void {
  add(
    'score object levels',
    score(severity, [{ label: 'none' }, { label: 'some', examples: ['late'] }, { label: 'all' }]),
  );
  add('score array levels', score(severity, [['calm'], ['annoyed', 'upset'], []]));
}

/** Special-token strings in a state: split by one another, inside an object, inside a list. */
export function specialStringStates(add: AddCase, instructions: string): void {
  add('special strings split by another', noul(instructions), '[MA[SEP]SK] and [SE[MASK]P] and [[CLS]]');
  add('special strings in object state', noul(instructions), {
    '[SEP]': '[MASK] value',
    nested: ['[CLS]', '<|endoftext|>'],
  });
  add('special strings in list state', noul(instructions), ['turn one [SEP]', 'turn two [MASK]']);
}

/** What only looks special, an added token that is not special, and a state of nothing but special strings. */
export function lookAlikes(add: AddCase, instructions: string): void {
  add('look-alikes stay', noul(instructions), '[mask] [ MASK ] [MASK [SEP  <|endoftext| ||IP_ADDRESS||');
  add('non-special added token stays a token', noul(instructions), 'from |||IP_ADDRESS||| at noon');
  add('only special strings', noul('[MASK]'), '[MASK][SEP][CLS][PAD][UNK]<|endoftext|><|padding|>');
}

/**
 * CJK state and options, emoji and right-to-left text, accents composed and decomposed; `ask` is the
 * family's phrasing of the CJK and emoji instructions.
 */
export function nonAsciiTexts(add: AddCase, instructions: string, ask: { cjk: string; emoji: string }): void {
  add('CJK state', noul(ask.cjk), '注文番号1042は2日遅れて届き、箱が破損していました。返金を希望します。');
  add(
    'CJK options',
    choice('主な話題は何ですか?', [
      ['配送', '遅延、破損'],
      ['請求', null],
      ['製品', '商品そのもの'],
    ]),
  );
  add('emoji and RTL', noul(ask.emoji), 'مرحبا 🙂👍🏽 שלום — très bien');
  add('accents composed and decomposed', noul(instructions), 'café cafe\u0301 naïve nai\u0308ve');
}

/** States that are objects (with control characters and escapes, nested) and lists of strings. */
export function structuredStates(add: AddCase, instructions: string): void {
  add('control characters and escapes in object', noul(instructions), {
    text: 'line\nbreak\ttab "quote" back\\slash \u0001\u001f \u007f \u2028',
  });
  add('object state', noul(instructions), { order: 1042, late_days: 2, damaged: true, note: null });
  add('nested object state', noul(instructions), { a: { b: { c: [1, { d: 'deep' }] } }, e: [] });
  add('array state of strings', noul(instructions), [
    'Hi, my order is late.',
    'Sorry to hear that.',
    'I want a refund.',
  ]);
}

/** Empty states: string, object, list. */
export function emptyStates(add: AddCase, instructions: string): void {
  add('empty string state', noul(instructions), '');
  add('empty object state', noul(instructions), {});
  add('empty array state', noul(instructions), []);
}
