// The MCP tools, written for an agent: `models`, one tool per question type (`check`: yes/no,
// `classify`: one of several options, `score`: a level of an ordered rubric) and `evaluate` (a
// whole request). Each answer comes with its probabilities and, where the model has decision
// thresholds, `act | review | abstain` with the thresholds that gave it. Refusals are tool errors
// carrying the status and `detail` the HTTP API would answer (422 entries with their `loc`).
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ParsedBody, type Answer, type SentOrder, type SystemOneResponse } from '../protocol/index.js';
import { ToolFailure, type McpBackend } from './backend.js';
import { decide, type Decision } from './decision.js';

/** Text content as the API takes it: a string, a JSON object or an array. */
const content = (what: string) =>
  z.union([z.string(), z.record(z.string(), z.unknown()), z.array(z.unknown())]).describe(what);

const state = content(
  'The content to judge: plain text, or a JSON object or array (sent as data, never as instructions). ' +
    'Example: "Order #1042 arrived late and the box was damaged. The customer asks for a refund."',
);
const model = z
  .string()
  .min(1)
  .optional()
  .describe('A model name from the `models` tool; omit it for the default model.');

/** The one question id the single-question tools send (and strip from error locations). */
const QID = 'q';

export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: z.ZodRawShape;
  run(backend: McpBackend, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
  /** A tool that asks the model: how its arguments become a request, and its answer. */
  asks?: Asking;
}

/**
 * A tool that asks the model, in two halves: the request body its (valid) arguments make, and its
 * answer from the response. Apart, the request can be made and checked off the event loop (the
 * API's body worker does, for a large /mcp message), and answered here from those bytes.
 */
export interface Asking {
  /** A single-question tool: refusals name `arguments.<field>`, without the question's id. */
  single: boolean;
  /** The request the arguments make, and the order of its questions and options where it matters. */
  request(args: Record<string, unknown>, defaultModel: string): { request: Record<string, unknown>; order?: SentOrder };
  answer(response: SystemOneResponse, backend: McpBackend): CallToolResult;
}

/** The tool's answer to `body` (its request, or that request already checked), or its refusal as a tool error. */
export async function answered(
  backend: McpBackend,
  asks: Asking,
  body: unknown,
  signal: AbortSignal,
): Promise<CallToolResult> {
  try {
    return asks.answer(await backend.evaluate(body, signal), backend);
  } catch (error) {
    return failure(error, asks.single);
  }
}

/** An asking tool: its two halves, and `run`, which is them in turn. */
function asking(asks: Asking): Pick<ToolDefinition, 'asks' | 'run'> {
  return {
    asks,
    run(backend, args, signal) {
      const { request, order } = asks.request(args, backend.defaultModel);
      return answered(backend, asks, order ? new ParsedBody(request, order) : request, signal);
    },
  };
}

/** A successful result: a one-line summary and the JSON, as text, and the JSON as structured content. */
function ok(summary: string, data: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: `${summary}\n${JSON.stringify(data)}` }], structuredContent: data };
}

/** A refusal as an MCP tool error: `{status, detail}` with the API's locations (`body` read as `arguments`). */
export function failure(error: unknown, single: boolean): CallToolResult {
  if (!(error instanceof ToolFailure)) throw error;
  const detail = Array.isArray(error.detail)
    ? (error.detail as Array<{ loc?: unknown[] }>).map((d) => ({ ...d, loc: toolLoc(d.loc, single) }))
    : error.detail;
  const body = { status: error.status, detail, ...retryOf(error.headers) };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/** The retry hint of a 429/503/529, when the API sent one. */
function retryOf(headers: Record<string, string>): { retry_after_ms?: number } {
  const ms = Number(headers['retry-after-ms']);
  return Number.isFinite(ms) && ms > 0 ? { retry_after_ms: ms } : {};
}

const TYPES: unknown[] = ['noul', 'choice', 'score'];

/** ["body", "questions", "q", "choice", "criteria"] → ["arguments", "criteria"] for a single-question tool. */
function toolLoc(loc: unknown[] | undefined, single: boolean): unknown[] | undefined {
  if (!loc || loc[0] !== 'body') return loc;
  const rest = loc.slice(1);
  if (single && rest[0] === 'questions' && rest[1] === QID) rest.splice(0, TYPES.includes(rest[2]) ? 3 : 2);
  return ['arguments', ...rest];
}

/** What a single-question tool answers: the answer, its decision if the model has thresholds, usage. */
function answerResult(response: SystemOneResponse, backend: McpBackend, summary: (a: Answer) => string) {
  const answer = response.answers[QID]!;
  const decision = decide(answer, backend.thresholds(response.model));
  const line = `${summary(answer)}${decision ? ` → ${decisionText(decision)}` : ''}`;
  return ok(line, {
    model: response.model,
    answer,
    ...(decision ? { decision } : {}),
    usage: response.usage,
  });
}

function decisionText(d: Decision): string {
  const c = d.certainty.toFixed(3);
  if (d.decision === 'act') return `act (certainty ${c} ≥ ${d.act_threshold})`;
  if (d.decision === 'review') return `review (certainty ${c} < ${d.act_threshold})`;
  return `abstain (certainty ${c} < ${d.review_threshold})`;
}

const pct = (p: number) => `${(p * 100).toFixed(1)}%`;

/** One question about the state; the answer summarised by `summary`. */
function single(
  type: Answer['type'],
  question: (args: Record<string, unknown>) => Record<string, unknown>,
  summary: (a: Answer) => string,
  /** The options in the order given, where the arguments hold it (an object of them lists "1" before "3"). */
  options?: (args: Record<string, unknown>) => string[] | undefined,
): Pick<ToolDefinition, 'asks' | 'run'> {
  return asking({
    single: true,
    request(args, defaultModel) {
      const request = {
        model: (args.model as string | undefined) ?? defaultModel,
        state: args.state,
        questions: { [QID]: { type, ...question(args) } },
      };
      const listed = options?.(args);
      return listed ? { request, order: [{ id: QID, options: listed }] } : { request };
    },
    answer: (response, backend) => answerResult(response, backend, summary),
  });
}

export const TOOLS: ToolDefinition[] = [
  {
    name: 'models',
    title: 'List models',
    description:
      'Lists the models you may ask, with their description and release date. The other tools take one of these names as `model` (optional: the default model answers otherwise).',
    inputSchema: {},
    async run(backend) {
      const models = await backend.models();
      return ok(`${models.length} model(s): ${models.map((m) => m.name).join(', ')}`, {
        default: backend.defaultModel,
        models,
      });
    },
  },
  {
    name: 'check',
    title: 'Yes/no check',
    description:
      'Asks a yes/no question about `state` and answers P(yes) in [0, 1] ("noul"). Use it as a cheap guard before an action, e.g. ' +
      '{"state": "rm -rf /var/lib/postgresql", "instructions": "Is this command destructive?"}. ' +
      '`criteria` may say what counts as yes and as no: {"true": "deletes or overwrites data", "false": "only reads"}. ' +
      'Where the model has decision thresholds, the result adds decision: act | review | abstain.',
    inputSchema: {
      state,
      instructions: content('The yes/no question, e.g. "Does the customer ask for a refund?"'),
      criteria: z
        .object({
          true: content('What counts as yes').optional(),
          false: content('What counts as no').optional(),
        })
        .optional()
        .describe('Optional: what counts as yes (`true`) and as no (`false`).'),
      model,
    },
    ...single(
      'noul',
      (a) => ({ instructions: a.instructions, ...(a.criteria === undefined ? {} : { criteria: a.criteria }) }),
      (a) => `P(yes) = ${pct((a as Extract<Answer, { type: 'noul' }>).noul)}`,
    ),
  },
  {
    name: 'classify',
    title: 'Pick one option',
    description:
      'Picks the option of `criteria` that fits `state` best, with a probability per option and a confidence. ' +
      '`criteria` maps each option name to a description of when it applies (null: the name says it all), e.g. ' +
      '{"state": "My package never arrived.", "instructions": "Which queue does this ticket go to?", ' +
      '"criteria": {"shipping": "delivery, delays, damage", "billing": "charges and refunds", "other": null}}. ' +
      'A list of option names is accepted too. 1 to 255 options; their order is kept.',
    inputSchema: {
      state,
      instructions: content('What to decide, e.g. "Which queue does this ticket go to?"'),
      criteria: z
        .union([z.record(z.string(), z.union([content('When this option applies'), z.null()])), z.array(z.string())])
        .describe('Option name → description (or null), or a list of option names.'),
      model,
    },
    ...single(
      'choice',
      (a) => ({
        instructions: a.instructions,
        criteria: Array.isArray(a.criteria)
          ? Object.fromEntries((a.criteria as string[]).map((name) => [name, null]))
          : a.criteria,
      }),
      (a) => {
        const c = a as Extract<Answer, { type: 'choice' }>;
        return `${c.choice} (p ${pct(c.probabilities[c.choice] ?? 0)}, confidence ${c.confidence.toFixed(3)})`;
      },
      // A list of names keeps its order ("3", "1", "2" are asked so); an object's arrives parsed.
      (a) => (Array.isArray(a.criteria) ? [...new Set(a.criteria as string[])] : undefined),
    ),
  },
  {
    name: 'score',
    title: 'Rate on a rubric',
    description:
      'Rates `state` on an ordered rubric: `criteria` lists the levels from lowest (level 0) to highest, 2 to 10 of them. ' +
      'Answers the probability-weighted score (0 to levels − 1), the probability of each level and a confidence, e.g. ' +
      '{"state": "The app crashes on every launch since the update.", "instructions": "How severe is this bug report?", ' +
      '"criteria": ["cosmetic", "annoying", "blocks some users", "blocks everyone"]}.',
    inputSchema: {
      state,
      instructions: content('What to rate, e.g. "How severe is this bug report?"'),
      criteria: z.array(content('A level')).describe('The levels, lowest first (2 to 10).'),
      model,
    },
    ...single(
      'score',
      (a) => ({ instructions: a.instructions, criteria: a.criteria }),
      (a) => {
        const s = a as Extract<Answer, { type: 'score' }>;
        return `score ${s.score.toFixed(2)} of ${Object.keys(s.legend).length - 1} (confidence ${s.confidence.toFixed(3)})`;
      },
    ),
  },
  {
    name: 'evaluate',
    title: 'Evaluate a whole request',
    description:
      'Answers several questions about one state at once (the state is read once: cheaper than one call per question). ' +
      '`questions` maps your ids to questions of POST /v1/systemone: {"type": "noul" | "choice" | "score", "instructions", "criteria"}, e.g. ' +
      '{"state": "…", "questions": {"refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}, ' +
      '"topic": {"type": "choice", "instructions": "Main topic?", "criteria": {"delivery": null, "billing": null}}}}. ' +
      'Answers per id, with decisions where the model has thresholds, and the token usage.',
    inputSchema: {
      state,
      questions: z
        .record(z.string(), z.record(z.string(), z.unknown()))
        .describe('Question id → {"type", "instructions", "criteria"}, as in POST /v1/systemone.'),
      model,
    },
    ...asking({
      single: false,
      request: (args, defaultModel) => ({
        request: { ...args, model: (args.model as string | undefined) ?? defaultModel },
      }),
      answer(response, backend) {
        const thresholds = backend.thresholds(response.model);
        const decisions = Object.fromEntries(
          Object.entries(response.answers).flatMap(([id, a]) => {
            const d = decide(a, thresholds);
            return d ? [[id, d]] : [];
          }),
        );
        const n = Object.keys(response.answers).length;
        return ok(`${n} answer(s) from ${response.model}`, {
          ...response,
          ...(Object.keys(decisions).length ? { decisions } : {}),
        });
      },
    }),
  },
];
