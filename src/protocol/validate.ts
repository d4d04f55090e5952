// Validating a request body against the zod schemas, with pydantic-style 422 entries, for the
// route and `assay eval` alike (through the service). The body itself (JSON.parse keeps
// `__proto__` as an own property) is what the engine gets, never zod's copy.
import { depthErrors } from './depth.js';
import { issuesToDetail } from './pydantic/issues.js';
import { hasKey, PLACEHOLDER, PROTO, shadow } from './proto-keys.js';
import { SystemOneRequestSchema, type SystemOneRequest, type ValidationError } from './schemas.js';

/** The body's 422 entries, or none when it is a valid SystemOneRequest. */
export function requestErrors(body: unknown): ValidationError[] {
  // The nesting bound first (the server's body parser checks it too; `assay eval` relies on this):
  // everything after walks bounded data.
  const deep = depthErrors(body);
  if (deep.length) return deep;
  const hasProto = hasKey(body, PROTO);
  const checked = hasProto ? shadow(structuredClone(body), [PROTO, PLACEHOLDER]) : body;
  const parsed = SystemOneRequestSchema.safeParse(checked);
  if (parsed.success) return [];
  const detail = issuesToDetail(parsed.error.issues, checked);
  if (!hasProto) return detail;
  return detail.map((d) => ({
    ...d,
    loc: d.loc.map((p) => (p === PLACEHOLDER ? PROTO : p)),
    ...('input' in d ? { input: shadow(d.input, [PLACEHOLDER, PROTO]) } : {}),
  }));
}

/** The body as a SystemOneRequest when it is one, else its 422 entries. */
export function parseRequest(body: unknown): { ok: true; request: SystemOneRequest } | { ok: false; detail: ValidationError[] } {
  const detail = requestErrors(body);
  return detail.length === 0 ? { ok: true, request: body as SystemOneRequest } : { ok: false, detail };
}
