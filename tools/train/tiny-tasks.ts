// The tiny-tasks task: templated support tickets whose answers follow from the text, for training a
// tiny Qwen2-shaped decoder that knows something. Deterministic per seed.
//
//   noul    "Does the customer ask for a refund?"   a refund phrase is in the ticket
//           "Is the ticket about a <product>?"      that product is the one named
//           "Was the ticket sent on a weekend?"     its day is Saturday or Sunday
//   choice  "Which product is the ticket about?"    among 3-4 products, the one named
//           "Which team should handle it?"          billing / shipping / technical, by the problem
//   score   "How urgent is the ticket?"             0-3, by the urgency phrase
//           "How many units were ordered?"          0-3 for 1-4 units (a digit or a word)
//
// Each question has two phrasings, and each type asks about different facts of the same ticket, so
// the model has to read the question to know what is asked. Every option name and label is one Qwen
// token, so the loss over the candidates' first tokens is the whole answer.
import { seededRandom, type Question } from '../../src/internal.js';

export const PRODUCTS = [
  'phone',
  'printer',
  'router',
  'camera',
  'tablet',
  'monitor',
  'keyboard',
  'speaker',
  'watch',
  'mouse',
  'charger',
];
const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const NAMES = [
  'Anna',
  'Ben',
  'Chloe',
  'David',
  'Emma',
  'Farid',
  'Grace',
  'Hugo',
  'Ines',
  'Jonas',
  'Kira',
  'Liam',
  'Mila',
  'Noah',
];
const PROBLEMS: Record<'billing' | 'shipping' | 'technical', string[]> = {
  billing: [
    'I was charged twice for my {p}.',
    'The invoice for my {p} shows the wrong price.',
    'My card was billed for a {p} I never ordered.',
  ],
  shipping: [
    'My {p} has not arrived yet.',
    'The {p} was delivered to the wrong address.',
    'The parcel with my {p} is lost.',
  ],
  technical: ['My {p} stopped working after a day.', 'The {p} keeps restarting.', 'The screen of my {p} stays black.'],
};
const REFUND = ['I want a refund.', 'Please give me my money back.', 'Refund me, please.'];
const NO_REFUND = ['Please help me.', 'What should I do?', 'Can you look into it?'];
const UNIT_WORDS = ['one', 'two', 'three', 'four'];
const PLURAL: Record<string, string> = { watch: 'watches', mouse: 'mice' };
const UNITS = ['The order had {n}.', 'Order size: {n}.', 'It was an order of {n}.'];
const URGENCY = [
  ['No rush at all.', 'Whenever you have time.'],
  ['Please answer this week.', 'A reply in a few days is fine.'],
  ['Please answer today.', 'I need this fixed soon.'],
  ['This is critical, I need it now!', 'URGENT: my business is blocked!'],
];

export interface TaskLine {
  state: string;
  questions: Record<string, Question>;
  expected: Record<string, boolean | string | number>;
  tags: string[];
}

export function generateLines(count: number, seed: number): TaskLine[] {
  const random = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const shuffle = <T>(xs: T[]): T[] => {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [xs[i], xs[j]] = [xs[j]!, xs[i]!];
    }
    return xs;
  };
  const lines: TaskLine[] = [];
  for (let n = 0; n < count; n++) {
    const product = pick(PRODUCTS);
    const team = pick(['billing', 'shipping', 'technical'] as const);
    const refund = random() < 0.5;
    const urgency = Math.floor(random() * 4);
    const day = pick(DAYS);
    const units = 1 + Math.floor(random() * 4);
    const amount = `${random() < 0.5 ? units : UNIT_WORDS[units - 1]!} ${units === 1 ? product : (PLURAL[product] ?? `${product}s`)}`;
    const parts = shuffle([
      pick(PROBLEMS[team]).replace('{p}', product),
      pick(refund ? REFUND : NO_REFUND),
      pick(URGENCY[urgency]!),
      pick(UNITS).replace('{n}', amount),
    ]);
    const state = `Ticket ${1000 + Math.floor(random() * 9000)} from ${pick(NAMES)}, sent on ${day}. ${parts.join(' ')}`;

    const nounKind = Math.floor(random() * 3);
    let noul: Question;
    let noulAnswer: boolean;
    if (nounKind === 0) {
      noul = { type: 'noul', instructions: pick(['Does the customer ask for a refund?', 'Is a refund requested?']) };
      noulAnswer = refund;
    } else if (nounKind === 1) {
      const asked = random() < 0.5 ? product : pick(PRODUCTS.filter((p) => p !== product));
      noul = {
        type: 'noul',
        instructions: pick([`Is the ticket about a ${asked}?`, `Does the customer write about a ${asked}?`]),
      };
      noulAnswer = asked === product;
    } else {
      noul = {
        type: 'noul',
        instructions: pick(['Was the ticket sent on a weekend?', 'Did the customer write on a weekend?']),
      };
      noulAnswer = day === 'Saturday' || day === 'Sunday';
    }

    let choice: Question;
    let choiceAnswer: string;
    if (random() < 0.5) {
      const others = shuffle(PRODUCTS.filter((p) => p !== product)).slice(0, 2 + Math.floor(random() * 2));
      choice = {
        type: 'choice',
        instructions: pick(['Which product is the ticket about?', 'What product does the customer write about?']),
        criteria: Object.fromEntries(shuffle([product, ...others]).map((p) => [p, null])),
      };
      choiceAnswer = product;
    } else {
      choice = {
        type: 'choice',
        instructions: pick(['Which team should handle the ticket?', 'Who should take this ticket?']),
        criteria: Object.fromEntries(
          shuffle(['billing', 'shipping', 'technical']).map((t) => [
            t,
            t === 'billing' ? 'charges and invoices' : t === 'shipping' ? 'deliveries' : 'broken devices',
          ]),
        ),
      };
      choiceAnswer = team;
    }
    const askUnits = random() < 0.5;
    const score: Question = askUnits
      ? {
          type: 'score',
          instructions: pick(['How many units were ordered?', 'How large was the order?']),
          criteria: ['one unit', 'two units', 'three units', 'four units'],
        }
      : {
          type: 'score',
          instructions: pick(['How urgent is the ticket?', 'How soon does the customer need an answer?']),
          criteria: ['not urgent', 'somewhat urgent', 'urgent', 'critical'],
        };
    lines.push({
      state,
      questions: { fact: noul, pick: choice, level: score },
      expected: { fact: noulAnswer, pick: choiceAnswer, level: askUnits ? units - 1 : urgency },
      tags: [
        ['refund', 'product', 'weekend'][nounKind]!,
        Object.keys(choice.criteria).includes('billing') ? 'team' : 'product-choice',
        askUnits ? 'units' : 'urgency',
      ],
    });
  }
  return lines;
}
