// The wire contract (docs/api.md) as zod 4 schemas: requests AND responses.
// Imports only zod, so the client SDK can share these exact schemas. The server validates
// request bodies with them (src/protocol/validate.ts turns zod issues into pydantic-style 422 entries),
// checks its own responses with them, and generates /openapi.json from them.
import { z } from 'zod';

/** Documented limits of the hosted service (choice up to 255 options, score 2–10 levels). A choice
 *  with one option is content like any other (answered with probability 1 and confidence 1). */
export const LIMITS = {
  minQuestions: 1,
  minChoiceOptions: 1,
  maxChoiceOptions: 255,
  minScoreLevels: 2,
  maxScoreLevels: 10,
} as const;

/** Text content: a string, a JSON object or an array. Order matters: errors.ts labels the members str / dict / list. */
export const ContentSchema = z
  .union([z.string(), z.record(z.string(), z.unknown()), z.array(z.unknown())])
  .meta({ title: 'Content', description: 'A string, a JSON object, or an array of text values' });
export type Content = z.infer<typeof ContentSchema>;

/** Record with a minimum/maximum entry count. zod records have no size checks, so a refinement
 *  carries pydantic's code in `params` and the same bounds go to the JSON schema via meta. */
function sized<T extends z.ZodType>(record: T, min: number, max?: number): T {
  let out = record.check(
    z.refine((v: unknown) => Object.keys(v as object).length >= min, {
      params: { code: 'too_short', min },
      abort: true,
    }),
  );
  if (max !== undefined) {
    out = out.check(
      z.refine((v: unknown) => Object.keys(v as object).length <= max, { params: { code: 'too_long', max } }),
    );
  }
  return out.meta(max === undefined ? { minProperties: min } : { minProperties: min, maxProperties: max }) as T;
}

const instructions = ContentSchema.nullable()
  .optional()
  .describe('What the model decides, rates, or answers yes/no about. Callers should always send it');

// ---------------------------------------------------------------- questions
// Request objects ignore fields they do not name (`z.object`, not `z.strictObject`), as the hosted
// service's pydantic models do by default: real clients send fields of their own (OpenRouter's
// `user`, `session_id`, `provider`, `trace`; the official SDK, whatever its request object holds). The one field
// refused is the retired `document` (validate.ts).

export const NoulCriteriaSchema = z
  .object({
    true: ContentSchema.nullable().optional().describe('What counts as yes (value near 1)'),
    false: ContentSchema.nullable().optional().describe('What counts as no (value near 0)'),
  })
  .meta({ id: 'NoulCriteria', title: 'NoulCriteria' });

export const NoulQuestionSchema = z
  .object({
    type: z.literal('noul'),
    instructions,
    criteria: NoulCriteriaSchema.nullable().optional(),
  })
  .meta({ id: 'NoulQuestion', title: 'NoulQuestion' });

export const ChoiceQuestionSchema = z
  .object({
    type: z.literal('choice'),
    instructions,
    criteria: sized(
      z.record(z.string(), ContentSchema.nullable()),
      LIMITS.minChoiceOptions,
      LIMITS.maxChoiceOptions,
    ).describe('Option name mapped to a description of when it applies (null: the name alone)'),
  })
  .meta({ id: 'ChoiceQuestion', title: 'ChoiceQuestion' });

export const ScoreQuestionSchema = z
  .object({
    type: z.literal('score'),
    instructions,
    criteria: z
      .array(ContentSchema)
      .min(LIMITS.minScoreLevels)
      .max(LIMITS.maxScoreLevels)
      .describe('Ordered level descriptions; the zero-based position is the score level'),
  })
  .meta({ id: 'ScoreQuestion', title: 'ScoreQuestion' });

export const QuestionSchema = z.discriminatedUnion('type', [
  NoulQuestionSchema,
  ChoiceQuestionSchema,
  ScoreQuestionSchema,
]);
export type NoulQuestion = z.infer<typeof NoulQuestionSchema>;
export type ChoiceQuestion = z.infer<typeof ChoiceQuestionSchema>;
export type ScoreQuestion = z.infer<typeof ScoreQuestionSchema>;
export type Question = z.infer<typeof QuestionSchema>;

// ---------------------------------------------------------------- request

/** The state: any Content, empty ones ("" / {} / []) included: the contract declares no minimum. */
export const StateSchema = ContentSchema.describe('The content all questions refer to');

export const SystemOneRequestSchema = z
  .object({
    state: StateSchema,
    model: z.string().describe('A name or alias returned by GET /v1/models, or a versioned id'),
    questions: sized(z.record(z.string(), QuestionSchema), LIMITS.minQuestions).describe(
      'Questions keyed by caller-chosen ids',
    ),
  })
  .meta({ id: 'SystemOneRequest', title: 'SystemOneRequest' });
export type SystemOneRequest = z.infer<typeof SystemOneRequestSchema>;

// ---------------------------------------------------------------- responses

const probability = z.number().min(0).max(1);

export const NoulAnswerSchema = z
  .strictObject({
    type: z.literal('noul'),
    noul: probability.describe('Probability of yes'),
  })
  .meta({ id: 'NoulAnswer', title: 'NoulAnswer' });

export const ChoiceAnswerSchema = z
  .strictObject({
    type: z.literal('choice'),
    choice: z.string().describe('The option with the highest probability'),
    probabilities: z.record(z.string(), probability).describe('Every option mapped to its probability; sums to ≈1'),
    confidence: probability,
  })
  .meta({ id: 'ChoiceAnswer', title: 'ChoiceAnswer' });

export const ScoreAnswerSchema = z
  .strictObject({
    type: z.literal('score'),
    score: z.number().describe('Probability-weighted average of the level numbers'),
    legend: z.record(z.string(), ContentSchema).describe('Level number ("0", "1", ...) mapped to its description'),
    probabilities: z.record(z.string(), probability).describe('Same keys as legend; sums to ≈1'),
    confidence: probability,
  })
  .meta({ id: 'ScoreAnswer', title: 'ScoreAnswer' });

export const AnswerSchema = z.discriminatedUnion('type', [NoulAnswerSchema, ChoiceAnswerSchema, ScoreAnswerSchema]);
export type NoulAnswer = z.infer<typeof NoulAnswerSchema>;
export type ChoiceAnswer = z.infer<typeof ChoiceAnswerSchema>;
export type ScoreAnswer = z.infer<typeof ScoreAnswerSchema>;
export type Answer = z.infer<typeof AnswerSchema>;

export const UsageSchema = z
  .strictObject({
    input_tokens: z.number().int().min(0).describe('Billable input tokens'),
    output_tokens: z.number().int().min(0).describe('Output tokens; currently free of charge'),
  })
  .meta({ id: 'Usage', title: 'Usage' });
export type Usage = z.infer<typeof UsageSchema>;

export const SystemOneResponseSchema = z
  .strictObject({
    model: z.string().describe('Versioned model that answered'),
    answers: sized(z.record(z.string(), AnswerSchema), 1),
    usage: UsageSchema,
  })
  .meta({ id: 'SystemOneResponse', title: 'SystemOneResponse' });
export type SystemOneResponse = z.infer<typeof SystemOneResponseSchema>;

export const ModelMetadataSchema = z
  .strictObject({
    name: z.string(),
    description: z.string(),
    release_date: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}$/)
      .describe('YYYY-MM-DD'),
  })
  .meta({ id: 'ModelMetadata', title: 'ModelMetadata' });
export type ModelMetadata = z.infer<typeof ModelMetadataSchema>;

export const ModelMetadataListSchema = z
  .strictObject({ models: z.array(ModelMetadataSchema) })
  .meta({ id: 'ModelMetadataList', title: 'ModelMetadataList' });
export type ModelMetadataList = z.infer<typeof ModelMetadataListSchema>;

// ---------------------------------------------------------------- errors

export const ValidationErrorSchema = z
  .object({
    loc: z.array(z.union([z.string(), z.number().int()])),
    msg: z.string(),
    type: z.string(),
    input: z.unknown().optional(),
    ctx: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'ValidationError', title: 'ValidationError' });
export type ValidationError = z.infer<typeof ValidationErrorSchema>;

export const HTTPValidationErrorSchema = z
  .object({ detail: z.array(ValidationErrorSchema).optional() })
  .meta({ id: 'HTTPValidationError', title: 'HTTPValidationError' });
export type HTTPValidationError = z.infer<typeof HTTPValidationErrorSchema>;

/** Body of every non-422 error: `{"detail": "<message>"}`. */
export const ErrorMessageSchema = z.object({ detail: z.string() }).meta({ id: 'ErrorMessage', title: 'ErrorMessage' });
export type ErrorMessage = z.infer<typeof ErrorMessageSchema>;
