// Validating a request body against the zod schemas, with pydantic-style 422 entries, for the
// route and `assay eval` alike (through the service). The body itself (JSON.parse keeps
// `__proto__` as an own property) is what the engine gets, never zod's copy.
import { depthErrors } from './depth.js';
import { issuesToDetail } from './pydantic/issues.js';
import { ownKeysParse, PLACEHOLDER, PROTO, shadow } from './proto-keys.js';
import {
  SystemOneRequestSchema,
  SystemOneResponseSchema,
  type SystemOneRequest,
  type ValidationError,
} from './schemas.js';

/** The body's 422 entries, or none when it is a valid SystemOneRequest. */
export function requestErrors(body: unknown): ValidationError[] {
  // The nesting bound first (the server's body parser checks it too; `assay eval` relies on this):
  // everything after walks bounded data.
  const deep = depthErrors(body);
  if (deep.length) return deep;
  const { result, checked, renamed } = ownKeysParse(SystemOneRequestSchema, body);
  const retired = retiredFields(body);
  if (result.success) return retired;
  const detail = issuesToDetail(result.error.issues, checked);
  if (!renamed) return [...detail, ...retired];
  const named = detail.map((d) => ({
    ...d,
    loc: d.loc.map((p) => (p === PLACEHOLDER ? PROTO : p)),
    ...('input' in d ? { input: shadow(d.input, [PLACEHOLDER, PROTO]) } : {}),
  }));
  return [...named, ...retired];
}

/**
 * Unknown fields are ignored (schemas.ts), except `document`: the field the content had before
 * `state`. A client still sending it would otherwise be answered about an empty or missing state
 * without being told, so it stays a 422 in pydantic's shape (extra_forbidden at its location) whose
 * message says what to send instead.
 */
function retiredFields(body: unknown): ValidationError[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !Object.hasOwn(body, 'document')) return [];
  const input = (body as { document: unknown }).document;
  return [
    {
      type: 'extra_forbidden',
      loc: ['body', 'document'],
      msg: 'Extra inputs are not permitted: `document` was replaced by `state`; send the content as `state`',
      input,
    },
  ];
}

/** The body as a SystemOneRequest when it is one, else its 422 entries. */
export function parseRequest(
  body: unknown,
): { ok: true; request: SystemOneRequest } | { ok: false; detail: ValidationError[] } {
  const detail = requestErrors(body);
  return detail.length === 0 ? { ok: true, request: body as SystemOneRequest } : { ok: false, detail };
}

/**
 * Whether a response satisfies the response schema, as the codes of its problems (none: it does).
 * Codes only: paths would carry question ids and option names into the logs. Every own key counts,
 * `__proto__` included (an answer under that id is an answer).
 */
export function responseProblems(response: unknown): string[] {
  const { result } = ownKeysParse(SystemOneResponseSchema, response);
  return result.success ? [] : result.error.issues.map((i) => i.code);
}
