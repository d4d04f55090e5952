// docs/file-formats.md, generated from the schemas of the files Assay reads (the model registry, a
// model folder's assay.json, the keys file, a family folder's decision.json and calibration.json):
// every field, its type, whether it is required (or its default) and its description (zod's
// .describe()). `npm run docs:formats` writes the page; test/docs/file-formats.test.ts checks that
// it is up to date.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { KeysFileSchema } from '../api/index.js';
import { CalibrationSchema, FAMILIES, ModelManifestSchema } from '../engine/index.js';
import { RegistryFileSchema } from '../registry/index.js';

export const FILE_FORMATS_PAGE = fileURLToPath(new URL('../../docs/file-formats.md', import.meta.url));

/** The part of a JSON Schema (draft 2020-12, as z.toJSONSchema writes it) the table reads. */
interface JsonSchema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
}

interface Row {
  field: string;
  type: string;
  required: string;
  description: string;
}

function isObject(s: JsonSchema): boolean {
  return s.type === 'object' || s.properties !== undefined;
}

/** A record: an object whose keys are names chosen by the writer (model ids, aliases). */
function isRecord(s: JsonSchema): boolean {
  return isObject(s) && s.properties === undefined && typeof s.additionalProperties === 'object';
}

/** The type column: JSON type, with the bounds and patterns the schema states. */
function typeOf(s: JsonSchema): string {
  if (s.anyOf) return s.anyOf.map(typeOf).join(' or ');
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' or ');
  if (s.type === 'null') return 'null';
  const types = (Array.isArray(s.type) ? s.type : [s.type ?? 'any']).filter((t) => t !== 'null');
  let t = types.join(' or ');
  if (isRecord(s)) t = `object (name → ${typeOf(s.additionalProperties as JsonSchema)})`;
  else if (t === 'array' && s.items) t = `array of ${typeOf(s.items)}`;
  const bounds = [
    s.exclusiveMinimum !== undefined ? `> ${s.exclusiveMinimum}` : undefined,
    s.minimum !== undefined && s.minimum > Number.MIN_SAFE_INTEGER ? `≥ ${s.minimum}` : undefined,
    s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER ? `≤ ${s.maximum}` : undefined,
    s.minLength ? 'non-empty' : undefined,
    s.pattern ? `matching \`${s.pattern}\`` : undefined,
  ].filter(Boolean);
  if (bounds.length) t = `${t} ${bounds.join(', ')}`;
  return Array.isArray(s.type) && s.type.includes('null') ? `${t} or null` : t;
}

/** Rows for every field under `s`, named by their path (`models.<name>.escalate.first`). */
function rows(s: JsonSchema, path: string): Row[] {
  const out: Row[] = [];
  const objects = [s, ...(s.anyOf ?? [])].filter((o) => isObject(o) && o.properties);
  for (const o of objects) {
    for (const [name, field] of Object.entries(o.properties!)) {
      const here = path ? `${path}.${name}` : name;
      const required =
        field.default !== undefined
          ? `default \`${JSON.stringify(field.default)}\``
          : o.required?.includes(name)
            ? 'required'
            : 'optional';
      out.push({ field: here, type: typeOf(field), required, description: field.description ?? '' });
      out.push(...rows(field, here));
    }
  }
  if (isRecord(s)) out.push(...rows(s.additionalProperties as JsonSchema, `${path}.<name>`));
  if (s.items) out.push(...rows(s.items, `${path}[]`));
  return out;
}

/** The markdown table of a schema's fields. */
export function fieldTable(schema: z.ZodType): string {
  const esc = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return [
    '| field | type | required | description |',
    '|---|---|---|---|',
    ...rows(json, '').map(
      (r) => `| \`${esc(r.field)}\` | ${esc(r.type)} | ${esc(r.required)} | ${esc(r.description)} |`,
    ),
  ].join('\n');
}

/** A family's decision.json: its own table, under the file's section. */
const DECISION_TABLES = FAMILIES.flatMap((f) =>
  f.decision ? [`### ${f.name}\n\n${fieldTable(f.decision)}\n`] : [],
).join('\n');

const FILES: { title: string; intro: string; schema?: z.ZodType; after?: string }[] = [
  {
    title: 'The model registry (`models/registry.json`)',
    intro: `Which names the \`model\` field accepts and which folder answers them. The server and every
command read it from \`--registry\`, else \`ASSAY_REGISTRY\`, else the package's \`models/registry.json\`;
\`assay models fetch\` adds entries to it. A relative \`path\` is taken from the registry file's folder.

Unknown fields: a field this version does not know (a newer Assay's, a tool's note) is kept, also when
\`assay models fetch\` rewrites the file, and not read. A field that looks like a misspelling of a
known one (\`varient\`, \`releaseDate\`: the same letters but case and \`_\`, or one or two edits away)
stops the command naming the field meant, since it would otherwise be silently ignored. The question
types of \`escalate.below\` are a closed set.`,
    schema: RegistryFileSchema,
  },
  {
    title: "A model folder's `assay.json`",
    intro: `Optional, beside the export's \`config.json\`: what Assay should know about the model. Read
when the model loads (\`assay serve\`, \`assay eval\`, \`assay calibrate\`); \`assay calibrate\` writes
\`answer_temperature\`, \`assay models synth\` writes the whole file. An engine setting of the same
name wins over the file.

Unknown fields: the tools that write model folders record their provenance here (\`assay models
synth\`: \`shape\`, \`dtype\`, \`seed\`, \`generator_version\`, …; the variant and export tools:
\`flavor\`, \`derived_from\`, …), and a newer Assay may add fields: all are kept and not read. A field
that looks like a misspelling of a field of this table stops the load naming the field meant.`,
    schema: ModelManifestSchema,
  },
  {
    title: 'The keys file (`--keys-file`, `ASSAY_KEYS_FILE`)',
    intro: `The API keys the server accepts, held as SHA-256 hashes only, with optional per-key models
and limits. Read at startup.

Unknown fields are refused: a misspelt \`models\` would let the key use every model.`,
    schema: KeysFileSchema,
  },
  {
    title: "A family folder's `decision.json`",
    intro: `Beside a model family's export (docs/models.md#model-families): its \`layout\` id says which
family the folder is (\`<family>-v<N>\`, read before any other file; the registry entry's \`family\`
wins), and each family reads its own fields, below. Read when the model loads; a field of the wrong
type stops the load naming the file and the field.

Unknown fields are kept and not read (other servers of these models write their own); a field that
looks like a misspelling of one the family reads stops the load naming the field meant.`,
    after: DECISION_TABLES,
  },
  {
    title: "A family folder's `calibration.json`",
    intro: `The head's temperature, as the closest peer server writes it, read the same way by every family
that has one: each answer's probabilities are softmax(logits / T) with its question type's T. What a
family adds is its own (the decider's score rows take \`isolated_row_temperature\` from its
decision.json; Laya's temperatures live in rl_agent_config.json). Absent: 1 for every type.`,
    schema: CalibrationSchema,
  },
];

/** The whole page. */
export function fileFormatsPage(): string {
  const sections = FILES.map(
    (f) => `## ${f.title}\n\n${f.intro}\n\n${f.schema ? `${fieldTable(f.schema)}\n` : ''}${f.after ?? ''}`,
  );
  return `# File formats

[← README](../README.md) · [all docs](README.md)

<!-- Generated from the schemas by npm run docs:formats (src/config/file-formats.ts): edit those, not this page. -->

The JSON files Assay reads, each checked by a schema when it is read. A problem stops the command
with the file, the path inside it and what was expected, e.g.

\`\`\`text
assay serve: model registry models/registry.json: models["svc-1.13.0"].release_date: expected a date as YYYY-MM-DD
\`\`\`

${sections.join('\n')}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(FILE_FORMATS_PAGE, fileFormatsPage());
}
