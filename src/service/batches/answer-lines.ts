// Answering a claimed group of batch lines through the service function, in the engine's batch
// lane: lines that share a state (the group) are merged into one request, so the state is encoded
// once and their questions share passes; each line's answers and usage are then read back out of
// it (the engine's per-question usage), so a line's result is what it would get sent alone. A
// model that cannot split its usage (an escalating entry), or a merged request that is refused,
// answers its lines one by one, each with its own answer or error.
import { InvalidRequestError, ParsedBody, questionOrder, sentOrder, writeResponse } from '../../protocol/index.js';
import type { Answer, Question, SentOrder, SystemOneRequest, Usage } from '../../protocol/index.js';
import { evaluateRequest, type Caller, type ServiceContext } from '../evaluate.js';
import { inSpan } from '../tracing.js';
import { errorLine } from './lines.js';
import type { ItemResult } from './store.js';

/** Most questions in one merged request (more lines: several merged requests). */
export const MAX_MERGED_QUESTIONS = 256;

export interface Line {
  line: number;
  customId: string;
  body: string;
}

interface ParsedLine extends Line {
  request: SystemOneRequest;
  order: SentOrder;
}

/** Errors that say nothing about the line (the engine or the model is not there now): the line runs again later. */
const TRANSIENT = new Set([
  'deadline',
  'overloaded',
  'model_load_failed',
  'engine_dead',
  'engine_failure',
  'model_unavailable',
  'model_in_use',
  'model_too_large',
]);

/** The error's code (its class's `code`), or internal_error. */
export function errorCode(error: unknown): string {
  const code = (error as { constructor?: { code?: unknown } } | null)?.constructor?.code;
  return typeof code === 'string' ? code : 'internal_error';
}

/** Whether a line that failed with `error` should be run again rather than answered with it. */
export function isTransient(error: unknown): boolean {
  return TRANSIENT.has(errorCode(error));
}

function okLine(line: ParsedLine, body: string, inputTokens: number): ItemResult {
  const result = `{"custom_id":${JSON.stringify(line.customId)},"response":{"status_code":200,"body":${body}}}`;
  return { line: line.line, result, ok: true, inputTokens };
}

function failedLine(line: Line, error: unknown): ItemResult {
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  const detail = error instanceof InvalidRequestError ? { detail: error.detail } : {};
  return { line: line.line, result: errorLine(line.customId, { code, message, ...detail }), ok: false, inputTokens: 0 };
}

function parse(line: Line): ParsedLine {
  const request = JSON.parse(line.body) as SystemOneRequest;
  return { ...line, request, order: questionOrder(request.questions, sentOrder(line.body)) };
}

function add(a: Usage, b: Usage): Usage {
  return { input_tokens: a.input_tokens + b.input_tokens, output_tokens: a.output_tokens + b.output_tokens };
}

/** Answers `lines` one request each. A transient failure is thrown (the claim is given back). */
async function oneByOne(ctx: ServiceContext, lines: ParsedLine[], caller: Caller): Promise<ItemResult[]> {
  const out: ItemResult[] = [];
  for (const line of lines) {
    try {
      const { response, order } = await evaluateRequest(ctx, new ParsedBody(line.request, line.order), caller);
      out.push(okLine(line, writeResponse(response, order), response.usage.input_tokens));
    } catch (error) {
      if (isTransient(error) || caller.signal?.aborted) throw error;
      out.push(failedLine(line, error));
    }
  }
  return out;
}

/** Model names (as lines name them) whose answers come without per-question usage: their lines are not merged. */
const unsplittable = new Set<string>();

/** Answers lines sharing one state as one request; undefined when it cannot (the caller goes one by one). */
async function merged(ctx: ServiceContext, lines: ParsedLine[], caller: Caller): Promise<ItemResult[] | undefined> {
  const questions: Record<string, Question> = {};
  const order: SentOrder = [];
  const ids: Array<Array<[string, string]>> = []; // per line: [merged id, its own id]
  lines.forEach((line, k) => {
    const own: Array<[string, string]> = [];
    line.order.forEach((q, j) => {
      const id = `${k}_${j}`;
      questions[id] = line.request.questions[q.id]!;
      order.push(q.options ? { id, options: q.options } : { id });
      own.push([id, q.id]);
    });
    ids.push(own);
  });
  const first = lines[0]!.request;
  let evaluation;
  try {
    const body: SystemOneRequest = { model: first.model, state: first.state, questions };
    evaluation = await evaluateRequest(ctx, new ParsedBody(body, order), caller);
  } catch (error) {
    if (isTransient(error) || caller.signal?.aborted) throw error;
    return undefined; // refused as a whole (a budget, a bad line): each line gets its own answer
  }
  const parts = evaluation.usageParts;
  if (!parts) {
    unsplittable.add(first.model);
    return undefined;
  }
  return lines.map((line, k) => {
    const answers: Record<string, Answer> = {};
    let usage = parts.shared;
    for (const [id, ownId] of ids[k]!) {
      answers[ownId] = evaluation.response.answers[id]!;
      usage = add(usage, parts.questions[id] ?? { input_tokens: 0, output_tokens: 0 });
    }
    const response = { model: evaluation.response.model, answers, usage };
    return okLine(line, writeResponse(response, line.order), usage.input_tokens);
  });
}

/**
 * Answers a claimed group's lines. Lines whose body no longer parses cannot occur (they were
 * checked at ingest); a transient failure throws, so the caller gives the claim back.
 */
export function answerLines(ctx: ServiceContext, lines: Line[], caller: Caller): Promise<ItemResult[]> {
  // One trace per claimed group: its lines' evaluations are its children (counts only).
  return inSpan('batch_lines', { 'assay.lines': lines.length }, () => answerGroup(ctx, lines, caller), true);
}

async function answerGroup(ctx: ServiceContext, lines: Line[], caller: Caller): Promise<ItemResult[]> {
  const parsed = lines.map(parse);
  const out: ItemResult[] = [];
  let start = 0;
  while (start < parsed.length) {
    // As many lines as fit in one merged request (a line alone when it is over the bound itself).
    let end = start;
    let count = 0;
    while (end < parsed.length && (end === start || count + parsed[end]!.order.length <= MAX_MERGED_QUESTIONS))
      count += parsed[end++]!.order.length;
    const slice = parsed.slice(start, end);
    const model = slice[0]!.request.model;
    const answered = slice.length > 1 && !unsplittable.has(model) ? await merged(ctx, slice, caller) : undefined;
    out.push(...(answered ?? (await oneByOne(ctx, slice, caller))));
    start = end;
  }
  return out;
}
