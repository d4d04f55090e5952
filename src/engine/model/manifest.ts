// A model folder's assay.json, as a zod schema: the type is inferred from it, the folder's file is
// checked by it when the model loads, and docs/file-formats.md is generated from it.
//
// Unknown fields: the tools that write model folders put their provenance here (`assay models
// synth`: shape, dtype, seed, generator_version, ...; the variant and export tools: flavor,
// derived_from, ...), and a newer Assay may add fields: all are kept and not read. A field that
// looks like a misspelling of one the engine reads (`temprature`, `answer_temperatures`) stops the
// load naming the field meant: it would otherwise be silently ignored.
import { z } from 'zod';
import { fileObject } from '../../protocol/index.js';
import { PROMPT_VERSIONS } from '../prompting/prompts.js';

const positive = 'expected a positive number';
const Temperature = z.number(positive).positive(positive).finite(positive);

export const ModelManifestSchema = fileObject({
  synthetic: z
    .boolean()
    .optional()
    .describe('true: random weights (`assay models synth`), the answers are meaningless; the server says so.'),
  warning: z.string().optional().describe('Why the answers cannot be trusted (written with `synthetic`).'),
  temperature: Temperature.optional().describe(
    'Softmax temperature applied to the answer logits (default 1; the engine setting wins).',
  ),
  prompt_version: z
    .string()
    .refine((v) => PROMPT_VERSIONS.includes(v), `expected one of ${PROMPT_VERSIONS.join(', ')}`)
    .optional()
    .describe(
      `Prompt wording and label strategy: ${PROMPT_VERSIONS.join(', ')} (default v1; the engine setting wins).`,
    ),
  answer_temperature: z
    .strictObject({
      noul: Temperature.optional().describe('For noul questions.'),
      choice: Temperature.optional().describe('For choice questions.'),
      score: Temperature.optional().describe('For score questions.'),
    })
    .optional()
    .describe(
      'Calibration, written by `assay calibrate`: per question type (noul, choice, score), the temperature its labels are divided by (default 1).',
    ),
  option_rotations: z
    .number()
    .int('expected a whole number ≥ 1')
    .min(1, 'expected a whole number ≥ 1')
    .optional()
    .describe(
      'Ask each choice question over this many rotations of its options and average (default 1): option-order bias control.',
    ),
});

/** What assay.json says (fields not listed are kept, unread). */
export type ModelManifest = z.infer<typeof ModelManifestSchema>;
