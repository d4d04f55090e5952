// The order a caller sent a request's maps in. A JS object lists integer-like keys ("1", "2",
// "10") first, ascending, whatever order they were sent in, and every other key after them in
// insertion order; the hosted (Python) service keeps the order sent. Two maps carry meaning in
// their order: the `questions` map (the order of the answers map) and a choice question's
// `criteria` (the order its options are listed, and labelled, in the prompt, and the order of its
// answer's probabilities). So their key order is read from the JSON text itself (sentOrder), it
// travels beside the parsed value (EvaluateRequest.order), and the response is written in it
// (writeResponse). Score levels need none of this: a score's criteria is an array, and its legend
// and probabilities keys ("0", "1", …) are written ascending, the levels' own order.
import type { Content, Question, SystemOneRequest, SystemOneResponse } from './schemas.js';

/** One question id as sent, and when it is a choice question, its option names as sent. */
export interface SentQuestion {
  id: string;
  options?: string[];
}

/** A request's question ids in the order sent (a repeated key keeps its first place, as in JSON.parse and Python). */
export type SentOrder = SentQuestion[];

/** Key orders read from the text: question id → the keys of its `criteria` object (undefined: not an object). */
type ScannedQuestions = Map<string, string[] | undefined>;

/**
 * A scan of JSON text that JSON.parse accepted: reads the keys of the few objects whose order is
 * wanted, and skips every other value without building it (strings by indexOf, containers by
 * counting brackets), so a megabyte state costs a pass over its characters, not a parse.
 */
class KeyScan {
  private i = 0;

  constructor(private readonly s: string) {}

  private ws(): number {
    const s = this.s;
    let c = s.charCodeAt(this.i);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = s.charCodeAt(++this.i);
    return c;
  }

  /** The index of the quote that closes the string opening at `open`. */
  private stringEnd(open: number): number {
    let end = open;
    for (;;) {
      end = this.s.indexOf('"', end + 1);
      if (end < 0) throw new SyntaxError('unterminated string');
      let backslashes = 0;
      while (this.s.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes++;
      if (backslashes % 2 === 0) return end;
    }
  }

  private key(): string {
    if (this.ws() !== 0x22) throw new SyntaxError('expected a key');
    const open = this.i;
    const end = this.stringEnd(open);
    this.i = end + 1;
    const raw = this.s.slice(open + 1, end);
    return raw.includes('\\') ? (JSON.parse(this.s.slice(open, end + 1)) as string) : raw;
  }

  /** Skips one value. */
  skip(): void {
    const s = this.s;
    const c = this.ws();
    if (c === 0x22) {
      this.i = this.stringEnd(this.i) + 1;
      return;
    }
    if (c === 0x7b || c === 0x5b) {
      let depth = 0;
      for (; this.i < s.length; this.i++) {
        const d = s.charCodeAt(this.i);
        if (d === 0x22) this.i = this.stringEnd(this.i);
        else if (d === 0x7b || d === 0x5b) depth++;
        else if ((d === 0x7d || d === 0x5d) && --depth === 0) {
          this.i++;
          return;
        }
      }
      throw new SyntaxError('unterminated container');
    }
    // A number, true, false or null: up to the next delimiter.
    while (this.i < s.length) {
      const d = s.charCodeAt(this.i);
      if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) return;
      this.i++;
    }
  }

  /**
   * When the next value is an object: calls `member` with each key, positioned at its value (which
   * `member` must consume), and answers true. Otherwise skips the value and answers false.
   */
  object(member: (key: string) => void): boolean {
    if (this.ws() !== 0x7b) {
      this.skip();
      return false;
    }
    this.i++;
    if (this.ws() === 0x7d) {
      this.i++;
      return true;
    }
    for (;;) {
      const key = this.key();
      if (this.ws() !== 0x3a) throw new SyntaxError('expected a colon');
      this.i++;
      member(key);
      const c = this.ws();
      this.i++;
      if (c === 0x7d) return true;
      if (c !== 0x2c) throw new SyntaxError('expected a comma');
    }
  }

  /** The keys of the next value when it is an object (each once, in first-seen order). */
  keys(): string[] | undefined {
    const keys = new Set<string>();
    return this.object((k) => {
      keys.add(k);
      this.skip();
    })
      ? [...keys]
      : undefined;
  }

  /** A questions map: each id (first place, last value, as JSON.parse) → its `criteria` keys. */
  questions(): ScannedQuestions | undefined {
    const out: ScannedQuestions = new Map();
    const found = this.object((id) => {
      let options: string[] | undefined;
      this.object((field) => {
        if (field === 'criteria') options = this.keys();
        else this.skip();
      });
      out.set(id, options);
    });
    return found ? out : undefined;
  }

  /** The JSON text of the (last) member `name` of the next value when it is an object. */
  member(name: string): string | undefined {
    let found: string | undefined;
    this.object((field) => {
      this.ws();
      const start = this.i;
      this.skip();
      if (field === name) found = this.s.slice(start, this.i);
    });
    return found;
  }

  /** A request body: the value of its (last) `questions` member. */
  request(): ScannedQuestions | undefined {
    let questions: ScannedQuestions | undefined;
    this.object((field) => {
      if (field === 'questions') questions = this.questions();
      else this.skip();
    });
    return questions;
  }
}

function scanned(text: string, read: (scan: KeyScan) => ScannedQuestions | undefined): SentOrder | undefined {
  try {
    const questions = read(new KeyScan(text));
    return questions && [...questions].map(([id, options]) => (options ? { id, options } : { id }));
  } catch {
    return undefined; // not the shape of a request (its validation says so): no order to keep
  }
}

/** The order of the question ids and of each question's criteria keys in a request body's JSON text (which parses). */
export function sentOrder(text: string): SentOrder | undefined {
  return scanned(text, (scan) => scan.request());
}

/**
 * The JSON text of the member `name` of the object `text` holds (which JSON.parse accepted), as sent:
 * a batch line's `body`, kept as its text so its maps keep the order they were sent in.
 */
export function memberText(text: string, name: string): string | undefined {
  try {
    return new KeyScan(text).member(name);
  } catch {
    return undefined;
  }
}

/** The same for the JSON text of a questions map alone (`assay eval --questions`). */
export function sentQuestionsOrder(text: string): SentOrder | undefined {
  return scanned(text, (scan) => scan.questions());
}

/** `sent` when it names exactly the own keys of `record` (each once), else the record's own key order. */
function sameKeys(record: object, sent: readonly string[] | undefined): string[] {
  const own = Object.keys(record);
  if (!sent || sent.length !== own.length) return own;
  const seen = new Set<string>();
  for (const k of sent) {
    if (seen.has(k) || !Object.hasOwn(record, k)) return own;
    seen.add(k);
  }
  return [...sent];
}

/**
 * The order to ask and answer `questions` in: as sent, where `sent` (read from the request's text)
 * names exactly their ids and each choice question's options; else their own key order (a request
 * built in JS, whose objects have no other order). Only choice questions carry options.
 */
export function questionOrder(questions: Record<string, Question>, sent?: SentOrder): SentOrder {
  const byId = new Map(sent?.map((q) => [q.id, q.options]));
  return sameKeys(
    questions,
    sent?.map((q) => q.id),
  ).map((id) => {
    const q = questions[id]!;
    return q.type === 'choice' ? { id, options: sameKeys(q.criteria, byId.get(id)) } : { id };
  });
}

/** A choice question's options in the order to ask them: name and description. */
export function optionEntries(
  criteria: Record<string, Content | null>,
  order: readonly string[] | undefined,
): Array<[string, Content | null]> {
  return sameKeys(criteria, order).map((k) => [k, criteria[k]!]);
}

// ---------------------------------------------------------------- writing in the sent order

/** `{"k":v,…}` from keys and their JSON (an undefined value is left out, as JSON.stringify does). */
function writeObject(members: Array<[string, string | undefined]>): string {
  const parts: string[] = [];
  for (const [k, json] of members) if (json !== undefined) parts.push(`${JSON.stringify(k)}:${json}`);
  return `{${parts.join(',')}}`;
}

/** The own keys of `record`: those of `first` it has, in that order, then the rest in its own order. */
export function keysInOrder(record: object, first: readonly string[] | undefined): string[] {
  if (!first) return Object.keys(record);
  const listed = new Set(first.filter((k) => Object.hasOwn(record, k)));
  return [...listed, ...Object.keys(record).filter((k) => !listed.has(k))];
}

/** An object's JSON with `inner` as the JSON of its member `field`. */
function writeWith(value: object, field: string, inner: string): string {
  return writeObject(
    Object.keys(value).map((k) => [k, k === field ? inner : JSON.stringify((value as Record<string, unknown>)[k])]),
  );
}

function writeMap<T>(
  record: Record<string, T>,
  order: readonly string[] | undefined,
  write: (k: string, v: T) => string | undefined,
): string {
  return writeObject(keysInOrder(record, order).map((k) => [k, write(k, record[k]!)]));
}

/**
 * The JSON of a response, with the answers map in the request's question order and each choice
 * answer's probabilities in its options' order (a score's keys are its levels, ascending). Without
 * an order, what JSON.stringify writes.
 */
export function writeResponse(response: SystemOneResponse, order: SentOrder | undefined): string {
  if (!order) return JSON.stringify(response);
  const options = new Map(order.map((q) => [q.id, q.options]));
  const answers = writeMap(
    response.answers,
    order.map((q) => q.id),
    (id, answer) =>
      answer.type === 'choice'
        ? writeWith(
            answer,
            'probabilities',
            writeMap(answer.probabilities, options.get(id), (_, p) => JSON.stringify(p)),
          )
        : JSON.stringify(answer),
  );
  return writeWith(response, 'answers', answers);
}

/** The JSON of a request body with its questions and each choice question's options in `order`. */
export function writeRequest(
  request: Pick<SystemOneRequest, 'state' | 'questions'> & { model?: string },
  order: SentOrder | undefined,
): string {
  if (!order) return JSON.stringify(request);
  const options = new Map(order.map((q) => [q.id, q.options]));
  const questions = writeMap(
    request.questions,
    order.map((q) => q.id),
    (id, question) =>
      question.type === 'choice'
        ? writeWith(
            question,
            'criteria',
            writeMap(question.criteria, options.get(id), (_, d) => JSON.stringify(d)),
          )
        : JSON.stringify(question),
  );
  return writeWith(request, 'questions', questions);
}
