// What the NLI pairs family reads of a model folder besides the tokenizer: its context length,
// its hypothesis templates and its label columns (docs/families/nli-pairs.md, "What the family reads").
//   nli_config.json (Assay's, optional): {"max_len"?, "hypothesis_template"?, "hypothesis_templates"?: {choice?, score?, noul?}}
//   tokenizer_config.json: model_max_length (the pipeline's truncation length)
//   config.json: label2id / id2label (the entailment column), max_position_embeddings
import { ModelLoadError } from '../../errors.js';
import type { NliLayoutConfig, NliQuestion } from './layout.js';
import { hypothesisTemplate } from './template.js';

/** An NLI cross-encoder's own settings (optional; its presence makes a folder nli-pairs: descriptor.ts). */
export const NLI_CONFIG = 'nli_config.json';

/** The pipeline's default template (ZeroShotClassificationPipeline.preprocess). */
export const PIPELINE_TEMPLATE = 'This example is {}.';
/** A noul row's default: the statement itself is the hypothesis. */
export const NOUL_TEMPLATE = '{}';

/** Which columns of a row's logits the readout uses. */
export interface NliLabels {
  /** The logits' width: 1 (a scorer), 2 (entailment / not_entailment) or 3 (with neutral). */
  columns: number;
  /** The entailment column: the first label2id entry whose name starts with "entail" (any case). */
  entailment: number;
  /** The column a row's entailment is weighed against: the last when entailment is 0, else the first. */
  contradiction: number;
}

export interface NliConfig extends NliLayoutConfig {
  labels: NliLabels;
  /** Where maxLen came from, for the load log. */
  maxLenFrom: 'nli_config.json' | 'tokenizer_config.json' | 'config.json';
}

/** HF's "no limit" model_max_length is 1e30; anything this large is not a limit. */
const NO_LIMIT = 1_000_000;

function object(json: unknown, file: string): Record<string, unknown> {
  if (json === undefined || json === null) return {};
  if (typeof json !== 'object' || Array.isArray(json)) throw new ModelLoadError(`${file}: expected an object`);
  return json as Record<string, unknown>;
}

/** The label columns of config.json, as the pipeline finds its entailment id. */
export function readNliLabels(modelConfig: unknown, file = 'config.json'): NliLabels {
  const cfg = object(modelConfig, file);
  const id2label = object(cfg.id2label, `${file}: id2label`);
  let label2id = object(cfg.label2id, `${file}: label2id`);
  if (Object.keys(label2id).length === 0)
    label2id = Object.fromEntries(Object.entries(id2label).map(([id, name]) => [String(name), Number(id)]));
  const ids = Object.values(label2id).map(Number);
  if (ids.length === 0 || ids.some((i) => !Number.isInteger(i) || i < 0))
    throw new ModelLoadError(`${file}: label2id: expected label names mapped to column numbers`);
  const columns = Math.max(...ids, ...Object.keys(id2label).map(Number).filter(Number.isInteger)) + 1;
  if (columns === 1) return { columns, entailment: 0, contradiction: 0 };
  const found = Object.entries(label2id).find(([name]) => name.toLowerCase().startsWith('entail'));
  if (!found)
    throw new ModelLoadError(
      `${file}: no label starting with "entail" in label2id (${Object.keys(label2id).join(', ')}): ` +
        `the entailment column is unknown`,
    );
  const entailment = Number(found[1]);
  return { columns, entailment, contradiction: entailment === 0 ? columns - 1 : 0 };
}

/** The folder's settings: nli_config.json over tokenizer_config.json over config.json. */
export function readNliConfig(files: { nli?: unknown; tokenizerConfig?: unknown; modelConfig: unknown }): NliConfig {
  const nli = object(files.nli, 'nli_config.json');
  const tokCfg = object(files.tokenizerConfig, 'tokenizer_config.json');
  const model = object(files.modelConfig, 'config.json');
  const positive = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1;

  let maxLen: number;
  let maxLenFrom: NliConfig['maxLenFrom'];
  if (nli.max_len !== undefined) {
    if (!positive(nli.max_len)) throw new ModelLoadError('nli_config.json: max_len: expected a positive integer');
    [maxLen, maxLenFrom] = [nli.max_len, 'nli_config.json'];
  } else if (positive(tokCfg.model_max_length) && tokCfg.model_max_length < NO_LIMIT)
    [maxLen, maxLenFrom] = [tokCfg.model_max_length, 'tokenizer_config.json'];
  else if (positive(model.max_position_embeddings))
    [maxLen, maxLenFrom] = [model.max_position_embeddings, 'config.json'];
  else
    throw new ModelLoadError(
      'no context length: set max_len in nli_config.json (tokenizer_config.json has no model_max_length, config.json no max_position_embeddings)',
    );

  const base = nli.hypothesis_template ?? PIPELINE_TEMPLATE;
  if (typeof base !== 'string') throw new ModelLoadError('nli_config.json: hypothesis_template: expected a string');
  const perType = object(nli.hypothesis_templates, 'nli_config.json: hypothesis_templates');
  const template = (type: NliQuestion['type'], fallback: string) => {
    const t = perType[type] ?? fallback;
    if (typeof t !== 'string')
      throw new ModelLoadError(`nli_config.json: hypothesis_templates.${type}: expected a string`);
    return hypothesisTemplate(t, `nli_config.json: hypothesis_templates.${type}`);
  };
  return {
    maxLen,
    maxLenFrom,
    templates: {
      choice: template('choice', base),
      score: template('score', base),
      noul: template('noul', NOUL_TEMPLATE),
    },
    labels: readNliLabels(files.modelConfig),
  };
}
