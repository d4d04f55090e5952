// The one place that shapes error bodies.
// - 422: zod issues (and malformed JSON) → FastAPI/pydantic v2 `{"detail":[{type,loc,msg,input,ctx?}]}`
//   (codes and messages as pydantic v2 writes them; `loc` starts with "body", integer array indices,
//   and inside the question union the tag is part of the path, as pydantic's tagged unions do it).
// - everything else: `{"detail":"<message>"}` via ApiError.
import type { z } from 'zod';
import type { ValidationError } from '../schemas.js';

type Issue = z.core.$ZodIssue;
type Path = (string | number)[];

const QUESTION_TAGS = ['noul', 'choice', 'score'] as const;
const EXPECTED_TAGS = QUESTION_TAGS.map((t) => `'${t}'`).join(', ');

/** Maps the issues of a failed SystemOneRequest parse to pydantic v2 detail entries. */
export function issuesToDetail(issues: readonly Issue[], body: unknown): ValidationError[] {
  const out: ValidationError[] = [];
  mapIssues(issues, [], body, out);
  return out;
}

/** zod runs size checks even after a type failure (a string where a list belongs fails `min`
 *  too); pydantic reports only the type, so size issues at a path that failed its type are dropped. */
function mapIssues(
  issues: readonly Issue[],
  prefix: readonly PropertyKey[],
  root: unknown,
  out: ValidationError[],
): void {
  const key = (i: Issue) => JSON.stringify(i.path.map(String));
  const typeFailed = new Set(issues.filter((i) => i.code === 'invalid_type').map(key));
  for (const issue of issues) {
    const sized = issue.code === 'too_small' || issue.code === 'too_big' || issue.code === 'custom';
    if (sized && typeFailed.has(key(issue))) continue;
    mapIssue(issue, prefix, root, out);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function has(parent: unknown, key: string | number): boolean {
  return typeof parent === 'object' && parent !== null && Object.prototype.hasOwnProperty.call(parent, key);
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const k of path) {
    if (!has(v, k as string | number)) return undefined;
    v = (v as Record<string | number, unknown>)[k as string | number];
  }
  return v;
}

/** pydantic's location: "body", then the path, with the question's tag after its id. */
function loc(root: unknown, path: readonly PropertyKey[]): Path {
  const p = path.map((k) => (typeof k === 'symbol' ? String(k) : k)) as Path;
  if (p.length > 2 && p[0] === 'questions') {
    const tag = valueAt(root, p.slice(0, 2)) as { type?: unknown } | undefined;
    if (isObject(tag) && QUESTION_TAGS.includes(tag.type as never)) p.splice(2, 0, tag.type as string);
  }
  return ['body', ...p];
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function size(v: unknown): number {
  return Array.isArray(v) ? v.length : typeof v === 'string' ? v.length : isObject(v) ? Object.keys(v).length : 0;
}

/** pydantic's member labels for the Content union (str | dict[str, Any] | list[Any]). */
function memberLabel(branch: readonly Issue[]): string | undefined {
  const first = branch[0];
  if (branch.length !== 1 || first?.code !== 'invalid_type' || first.path.length !== 0) return undefined;
  return { string: 'str', record: 'dict[str,any]', object: 'dict[str,any]', array: 'list[any]' }[
    first.expected as string
  ];
}

function mapIssue(issue: Issue, prefix: readonly PropertyKey[], root: unknown, out: ValidationError[]): void {
  const path = [...prefix, ...issue.path];
  const input = valueAt(root, path);
  const at = loc(root, path);
  const push = (type: string, msg: string, value: unknown, ctx?: Record<string, unknown>) =>
    out.push(ctx ? { type, loc: at, msg, input: value, ctx } : { type, loc: at, msg, input: value });

  // A required field that is absent: pydantic reports "missing" with the parent object as input.
  const parentPath = path.slice(0, -1);
  const key = path[path.length - 1];
  if ((issue.code === 'invalid_type' || issue.code === 'invalid_union') && !('note' in issue && issue.note)) {
    if (path.length === 0 && root === undefined) return void push('missing', 'Field required', null);
    if (path.length > 0 && !has(valueAt(root, parentPath), key as string | number)) {
      return void push('missing', 'Field required', valueAt(root, parentPath));
    }
  }

  switch (issue.code) {
    case 'invalid_union': {
      if ((issue as { note?: string }).note === 'No matching discriminator') {
        // zod points at the tag field; pydantic points at the question and reports the whole of it.
        const qPath = path.slice(0, -1);
        const question = valueAt(root, qPath);
        const qloc = loc(root, qPath);
        const ctx = { discriminator: "'type'" };
        if (!has(question, 'type')) {
          out.push({
            type: 'union_tag_not_found',
            loc: qloc,
            msg: "Unable to extract tag using discriminator 'type'",
            input: question,
            ctx,
          });
        } else {
          const t = (question as { type: unknown }).type;
          const tag = typeof t === 'string' ? t : JSON.stringify(t);
          out.push({
            type: 'union_tag_invalid',
            loc: qloc,
            msg: `Input tag '${tag}' found using 'type' does not match any of the expected tags: ${EXPECTED_TAGS}`,
            input: question,
            ctx: { ...ctx, tag, expected_tags: EXPECTED_TAGS },
          });
        }
        return;
      }
      // Content union: when the value had the right type but broke a constraint (e.g. an empty
      // state), only that member's failure is interesting; otherwise list every member, labelled.
      const branches = issue.errors;
      const typed = branches.filter((b) => memberLabel(b) === undefined);
      if (typed.length === 1) return mapIssues(typed[0]!, path, root, out);
      for (const b of branches) {
        const label = memberLabel(b);
        const before = out.length;
        mapIssues(b, path, root, out);
        if (label) for (const e of out.slice(before)) e.loc = [...e.loc, label];
      }
      return;
    }
    case 'invalid_type': {
      const simple: Record<string, [string, string]> = {
        string: ['string_type', 'Input should be a valid string'],
        number: ['float_type', 'Input should be a valid number'],
        int: ['int_type', 'Input should be a valid integer'],
        boolean: ['bool_type', 'Input should be a valid boolean'],
        array: ['list_type', 'Input should be a valid list'],
        record: ['dict_type', 'Input should be a valid dictionary'],
      };
      const hit = simple[issue.expected];
      if (hit) return void push(hit[0], hit[1], input);
      if (issue.expected === 'object') {
        // Nested model fields say which class; the body and tagged-union members extract fields.
        if (at[at.length - 1] === 'criteria' && at[at.length - 2] === 'noul') {
          return void push('model_type', 'Input should be a valid dictionary or instance of NoulCriteria', input, {
            class_name: 'NoulCriteria',
          });
        }
        return void push(
          'model_attributes_type',
          'Input should be a valid dictionary or object to extract fields from',
          input,
        );
      }
      return void push('value_error', `Value error, ${issue.message}`, input);
    }
    case 'unrecognized_keys': {
      for (const k of issue.keys) {
        out.push({
          type: 'extra_forbidden',
          loc: loc(root, [...path, k]),
          msg: 'Extra inputs are not permitted',
          input: valueAt(input, [k]),
        });
      }
      return;
    }
    case 'too_small':
    case 'too_big': {
      const min = issue.code === 'too_small';
      const bound = Number(min ? issue.minimum : issue.maximum);
      if (issue.origin === 'string') {
        const word = min ? 'least' : 'most';
        return void push(
          min ? 'string_too_short' : 'string_too_long',
          `String should have at ${word} ${plural(bound, 'character')}`,
          input,
          min ? { min_length: bound } : { max_length: bound },
        );
      }
      return void pushSized(push, min, 'List', bound, input);
    }
    case 'custom': {
      const p = (issue.params ?? {}) as { code?: string; min?: number; max?: number };
      if (p.code === 'too_short' || p.code === 'too_long') {
        if (!isObject(input)) return;
        return void pushSized(
          push,
          p.code === 'too_short',
          'Dictionary',
          Number(p.code === 'too_short' ? p.min : p.max),
          input,
        );
      }
      return void push('value_error', `Value error, ${issue.message}`, input);
    }
    case 'invalid_key': {
      // pydantic reports a bad dict key at [..., key, "[key]"] with the key as input.
      for (const sub of issue.issues) {
        const before = out.length;
        mapIssue(sub as Issue, [], String(key), out);
        for (const e of out.slice(before)) e.loc = [...at, '[key]'];
      }
      return;
    }
    default:
      return void push('value_error', `Value error, ${issue.message}`, input);
  }
}

function pushSized(
  push: (type: string, msg: string, value: unknown, ctx?: Record<string, unknown>) => void,
  min: boolean,
  fieldType: 'List' | 'Dictionary',
  bound: number,
  input: unknown,
): void {
  const actual = size(input);
  const msg = `${fieldType} should have at ${min ? 'least' : 'most'} ${plural(bound, 'item')} after validation, not ${actual}`;
  const ctx = min
    ? { field_type: fieldType, min_length: bound, actual_length: actual }
    : { field_type: fieldType, max_length: bound, actual_length: actual };
  push(min ? 'too_short' : 'too_long', msg, input, ctx);
}
