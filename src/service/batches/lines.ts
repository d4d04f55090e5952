// One line of a batch's JSONL input, checked as the API checks a single request: the envelope
// (`custom_id`, `body`, and OpenAI's `method` / `url` when present), then the body exactly as
// POST /v1/systemone validates it, with the same 422 entries. A valid line becomes an item (its
// body kept as the text it was sent in, so its maps keep their order); an invalid one becomes its
// error result at once, with its line number (docs/batches.md: invalid lines are reported and skipped).
import { jsonInvalid, memberText, parseRequest, stateHash, type ValidationError } from '../../protocol/index.js';
import type { ItemResult, NewItem } from './store.js';

/** The one endpoint a line may name (OpenAI's `url`), and its method. */
export const BATCH_ENDPOINT = '/v1/systemone';

/** Longest custom_id accepted (OpenAI's is 64; ids often carry a path or a key, so more room). */
export const MAX_CUSTOM_ID = 512;

export type CheckedLine =
  | { kind: 'blank' }
  | { kind: 'item'; item: NewItem }
  | { kind: 'invalid'; customId: string | null; result: ItemResult };

/** The results line of a line that was never run: its custom_id (null when it had none) and its error. */
export function errorLine(
  customId: string | null,
  error: { code: string; message: string; line?: number; detail?: ValidationError[] },
): string {
  return JSON.stringify({ custom_id: customId, error });
}

function invalid(line: number, customId: string | null, detail: ValidationError[]): CheckedLine {
  const first = detail[0];
  const where = first ? first.loc.join('.') : '';
  const message = `line ${line}: ${first ? `${first.msg}${where ? ` at ${where}` : ''}` : 'invalid line'}`;
  return {
    kind: 'invalid',
    customId,
    result: {
      line,
      ok: false,
      inputTokens: 0,
      result: errorLine(customId, { code: 'invalid_request', message, line, detail }),
    },
  };
}

function envelopeError(type: string, loc: string, msg: string, input: unknown): ValidationError {
  return { type, loc: [loc], msg, input } as ValidationError;
}

/** Checks line number `line` (1-based) of a batch input. */
export function checkLine(text: string, line: number): CheckedLine {
  if (text.trim() === '') return { kind: 'blank' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const e = jsonInvalid(text);
    return invalid(line, null, [{ ...e, loc: ['line', ...e.loc.slice(1)] } as ValidationError]);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return invalid(line, null, [envelopeError('model_type', 'line', 'Input should be an object', value)]);
  const record = value as Record<string, unknown>;
  const customId = typeof record.custom_id === 'string' ? record.custom_id : null;
  const problems: ValidationError[] = [];
  if (!('custom_id' in record)) problems.push(envelopeError('missing', 'custom_id', 'Field required', record));
  else if (typeof record.custom_id !== 'string')
    problems.push(envelopeError('string_type', 'custom_id', 'Input should be a valid string', record.custom_id));
  else if (record.custom_id.length === 0 || record.custom_id.length > MAX_CUSTOM_ID)
    problems.push(
      envelopeError(
        'string_length',
        'custom_id',
        `custom_id should have 1 to ${MAX_CUSTOM_ID} characters`,
        record.custom_id.slice(0, 80),
      ),
    );
  if ('method' in record && record.method !== 'POST')
    problems.push(envelopeError('literal_error', 'method', "Input should be 'POST'", record.method));
  if ('url' in record && record.url !== BATCH_ENDPOINT)
    problems.push(envelopeError('literal_error', 'url', `Input should be '${BATCH_ENDPOINT}'`, record.url));
  if (!('body' in record)) problems.push(envelopeError('missing', 'body', 'Field required', record));
  if (problems.length > 0) return invalid(line, customId, problems);

  // The body is checked as the route checks one: the same entries, their loc starting at 'body'.
  const parsed = parseRequest(record.body);
  if (!parsed.ok) return invalid(line, customId, parsed.detail);
  const body = memberText(text, 'body') ?? JSON.stringify(record.body);
  const { model, state } = parsed.request;
  // The state's hash (fixed length) then the model: one group per state and model (no NUL: PostgreSQL text refuses it).
  return { kind: 'item', item: { line, customId: customId!, group: `${stateHash(state)}|${model}`, body } };
}
