// Request bodies as bytes: validated off the caller's thread, then handed on as bytes, never as a
// parsed object. A large body parsed on the event loop (and then walked by validation, and cloned
// into the engine thread and a planner thread) held the whole server: 2.8 s for a 6 MB body of empty
// arrays. So past a size the API's body worker parses and validates the bytes (the same code, the
// same 422s), and a valid body travels on as its bytes; the engine's planner parses it again, in
// its own thread, next to where it is rendered and tokenized.
import { questionOrder, sentOrder, type SentOrder } from './order.js';
import { jsonInvalid } from './pydantic/json-decode.js';
import type { ValidationError } from './schemas.js';
import { parseRequest } from './validate.js';

/** A valid request body, as the bytes the client sent, with the few facts the service needs. */
export class ValidatedBody {
  constructor(
    /** UTF-8 JSON of a valid SystemOneRequest. Owns its ArrayBuffer (transferable). */
    readonly bytes: Uint8Array,
    readonly model: string,
    readonly questionCount: number,
    /** Its question ids and choice options in the order sent (order.ts): the response's order. */
    readonly order: SentOrder,
  ) {}
}

/**
 * A request body parsed on the caller's thread (a small one), with the order its maps were sent in,
 * read from its text (order.ts): a parsed object lists integer-like keys first, whatever was sent.
 */
export class ParsedBody {
  constructor(
    readonly value: unknown,
    /** Undefined: not known (the body was not read from text), the objects' own key order is used. */
    readonly order: SentOrder | undefined,
  ) {}
}

/** What checking a body gives: its 422 entries, or the facts of a valid body. */
export type BodyVerdict = { detail: ValidationError[] } | { model: string; questionCount: number; order: SentOrder };

/** Parses and validates a body's text: json_invalid with its offset, the schema's entries, or the facts. */
export function checkBodyText(text: string): BodyVerdict {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { detail: [jsonInvalid(text)] };
  }
  const parsed = parseRequest(body);
  if (!parsed.ok) return { detail: parsed.detail };
  const { model, questions } = parsed.request;
  return { model, questionCount: Object.keys(questions).length, order: questionOrder(questions, sentOrder(text)) };
}

/** A view of `bytes` that owns its whole ArrayBuffer, so it can be transferred (copied only when it is a slice of a larger one). */
export function ownedBytes(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer)
    return bytes as Uint8Array<ArrayBuffer>;
  return new Uint8Array(bytes);
}
