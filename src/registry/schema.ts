// The model registry's file format (models/registry.json, ASSAY_REGISTRY), as a zod schema: the
// types are inferred from it, the registry is checked by it, and docs/file-formats.md is generated
// from it (npm run docs:formats).
//
// Unknown fields: written by people (operators) and by tools (`assay models fetch`), a registry may
// hold fields this version does not know (a newer Assay's, a tool's notes): they are kept, and kept
// when `assay models fetch` rewrites the file. A field that looks like a misspelling of a known one
// (`varient`, `releaseDate`) stops the command naming the field meant: a misspelt field would
// otherwise be silently ignored. The question types of `escalate.below` are a closed set.
import { z } from 'zod';
import { FAMILY_NAMES, parseVariant, VARIANTS } from '../engine/index.js';
import { fileObject } from '../protocol/index.js';

const nonEmpty = (what: string) => z.string().min(1, `expected ${what}`);

/** A threshold on a question's certainty: escalate under it; null escalates every question of the type. */
const certainty = 'expected a certainty between 0 and 1, or null (escalate all)';
const Certainty = z.number(certainty).min(0, certainty).max(1, certainty).nullable();

export const RemoteModelSchema = fileObject({
  url: z
    .string()
    .regex(/^https?:\/\/[^/]/, 'expected an http(s) URL')
    .describe('Base URL of an endpoint speaking this API, e.g. https://assay.example.com (POST {url}/v1/systemone).'),
  model: nonEmpty('a model name').describe('The model name sent to it.'),
  api_key_env: nonEmpty('the name of an environment variable')
    .optional()
    .describe('The environment variable holding its API key (sent as a Bearer token).'),
});

export const EscalationSchema = fileObject({
  first: z
    .string()
    .describe('A registered model (name or alias) that does not escalate itself: answers every question.'),
  second: z
    .union([z.string(), RemoteModelSchema], 'expected a model name or {"url", "model", "api_key_env"}')
    .describe(
      'Where uncertain questions are asked again: a registered model that does not escalate itself, or a remote endpoint.',
    ),
  below: z
    .strictObject({
      noul: Certainty.optional().describe('Threshold for noul questions.'),
      choice: Certainty.optional().describe('Threshold for choice questions.'),
      score: Certainty.optional().describe('Threshold for score questions.'),
    })
    .describe(
      'Per question type (noul, choice, score): escalate when certainty < value, between 0 and ' +
        '1; null escalates every question of the type; a type left out never escalates.',
    ),
  timeout_ms: z.number().positive().optional().describe("The second model's deadline, ms (default 10000)."),
  on_failure: z
    .enum(['first', 'error'])
    .optional()
    .describe(
      'When the second model fails or misses the deadline: keep the first answers ("first", the default) or fail the request with 503 ("error").',
    ),
});

/** Per question type, a certainty threshold between 0 and 1 (the MCP tools' act | review | abstain). */
const threshold = 'expected a certainty between 0 and 1';
const TypeThresholdsSchema = z.strictObject({
  noul: z.number(threshold).min(0, threshold).max(1, threshold).optional().describe('For noul: max(p, 1 − p).'),
  choice: z.number(threshold).min(0, threshold).max(1, threshold).optional().describe('For choice: the confidence.'),
  score: z.number(threshold).min(0, threshold).max(1, threshold).optional().describe('For score: the confidence.'),
});

export const DecisionSchema = fileObject({
  act: TypeThresholdsSchema.describe(
    'Certainty at or above which an answer can be acted on, per question type; a type left out gets no decision.',
  ),
  review: TypeThresholdsSchema.optional().describe(
    'Certainty under `act` but at or above this: review; under it: abstain. A type left out is never abstained on.',
  ),
});

export const SyntheticSchema = fileObject({
  shape: z.string().describe('A shape of models/shapes.json (tiny, qwen2.5-0.5b, ...).'),
  dtype: z.string().describe('fp32, fp16, int8, q4 or q4f16.'),
  positionIds: z.boolean().optional().describe('Whether the graph takes position_ids (default true).'),
  seed: z.number().optional().describe('Seed of the random weights.'),
  weights: z
    .string('expected a path to a safetensors file')
    .min(1, 'expected a path to a safetensors file')
    .optional()
    .describe(
      "Trained weights (safetensors, relative to the registry file's folder) the folder is written from instead of random ones.",
    ),
});

export const ModelEntrySchema = fileObject({
  path: z
    .string()
    .default('')
    .describe(
      "Model folder (a Hugging Face ONNX export), relative to the registry file's folder or " +
        'absolute. Required, except for an escalating entry, which has none.',
    ),
  escalate: EscalationSchema.optional().describe(
    'Answers through two other models (docs/escalation.md); such an entry has no folder of its own.',
  ),
  variant: z
    .string()
    .refine((v) => parseVariant(v) !== undefined, `expected one of ${VARIANTS.join(', ')}`)
    .optional()
    .describe(`Which ONNX file of the folder to run: ${VARIANTS.join(', ')}. Default: the engine's choice.`),
  family: z
    .enum(FAMILY_NAMES)
    .optional()
    .describe(
      `The model family, when its files do not say it: ${FAMILY_NAMES.join(', ')}. Default: the ` +
        `folder's decision.json \`layout\`, else what its files show (docs/models.md#model-families).`,
    ),
  graph_rewrite: z
    .boolean()
    .optional()
    .describe(
      "false: run the export as is, without the load-time graph rewrite (serve's --no-graph-rewrite, per model).",
    ),
  fused_attention: z
    .boolean()
    .optional()
    .describe(
      "false: keep this model's attention as exported instead of rewriting it into onnxruntime's " +
        "fused GroupQueryAttention (serve's --no-fused-attention, per model).",
    ),
  synthetic: SyntheticSchema.optional().describe(
    'When set and the folder is missing, `assay models synth` (and `npm start`) writes this synthetic model there.',
  ),
  description: z.string().describe('Shown in GET /v1/models and `assay models`.'),
  release_date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a date as YYYY-MM-DD')
    .describe('YYYY-MM-DD, shown in GET /v1/models.'),
  listed: z.boolean().optional().describe('List this versioned id in GET /v1/models as well as its aliases.'),
  decision_thresholds: DecisionSchema.optional().describe(
    "Thresholds that turn this model's answers into act | review | abstain for agents (the MCP tools; docs/agents.md), e.g. from a coverage report.",
  ),
});

function own<T>(o: Record<string, T>, k: string): T | undefined {
  return Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined;
}

export const RegistryFileSchema = fileObject({
  default: z.string().describe('The model (versioned id or alias) a request without `model` gets.'),
  models: z
    .record(z.string(), ModelEntrySchema)
    .describe('Versioned ids (always accepted in `model`) → their entries.'),
  aliases: z
    .record(z.string(), z.string())
    .default({})
    .describe('Alias → versioned id. GET /v1/models lists the aliases, then the versioned ids marked `listed`.'),
}).superRefine((r, ctx) => {
  const problem = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  const local = (name: string): string | undefined => {
    const entry = own(r.models, own(r.aliases, name) ?? name);
    if (!entry) return `expected a model of this registry, got "${name}"`;
    return entry.escalate ? `expected a model that does not escalate itself, got "${name}"` : undefined;
  };
  for (const [id, e] of Object.entries(r.models)) {
    if (e.escalate) {
      const first = local(e.escalate.first);
      if (first) problem(['models', id, 'escalate', 'first'], first);
      const second = typeof e.escalate.second === 'string' ? local(e.escalate.second) : undefined;
      if (second) problem(['models', id, 'escalate', 'second'], second);
    } else if (!e.path)
      problem(['models', id, 'path'], 'expected a model folder (an entry that does not escalate has one)');
  }
  for (const [alias, target] of Object.entries(r.aliases)) {
    if (own(r.models, alias)) problem(['aliases', alias], `expected a name that is not a versioned id too`);
    else if (!own(r.models, target))
      problem(['aliases', alias], `expected a versioned id, got unknown model "${target}"`);
  }
  if (!own(r.models, r.default) && !own(r.aliases, r.default))
    problem(['default'], `expected a model or alias of this registry, got "${r.default}"`);
});

export type RemoteModel = z.infer<typeof RemoteModelSchema>;
export type EscalationSpec = z.infer<typeof EscalationSchema>;
export type SyntheticSpec = z.infer<typeof SyntheticSchema>;
export type ModelEntry = z.infer<typeof ModelEntrySchema>;
export type RegistryFile = z.infer<typeof RegistryFileSchema>;
