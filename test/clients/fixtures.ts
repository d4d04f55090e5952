// What both SDK tests send: a state of each kind the contract allows, and a key with a small input-token rate.
export const STATES: Array<[string, string | Record<string, string> | string[]]> = [
  ['a string', 'The invoice was paid on time, by card.'],
  ['an object', { invoice: 'INV-7', status: 'paid', method: 'card' }],
  ['an array', ['Invoice INV-7 was sent.', 'It was paid on time by card.']],
];

/** A key limited to 40 input tokens a second: its second call in a row gets a 429 for about a second. */
export const SLOW_KEY = 'test-key-slow';
