// The NLI pairs family (`nli-pairs`): a zero-shot NLI cross-encoder, one (state, hypothesis) row per
// option, known by its nli_config.json or a sequence classifier's config.json; its rows run whole,
// batched. docs/families/nli-pairs.md.
import { defineFamily, rowParts } from '../descriptor.js';
import { NLI_CONFIG } from './config.js';
import { NliHypothesisTooLong } from './layout.js';

/** Whether config.json describes a sequence classifier (a cross-encoder's `*ForSequenceClassification`). */
function isSequenceClassifier(config: Record<string, unknown> | undefined): boolean {
  const archs = config?.architectures;
  return Array.isArray(archs) && archs.some((a) => typeof a === 'string' && a.endsWith('ForSequenceClassification'));
}

export const nli = defineFamily({
  name: 'nli-pairs',
  engine: 'encoder-rows',
  reuses: 'nothing',
  detect: {
    // config.json is read only when nli_config.json does not decide.
    by: (folder) =>
      folder.has(NLI_CONFIG)
        ? NLI_CONFIG
        : isSequenceClassifier(folder.json('config.json'))
          ? 'config.json'
          : undefined,
    needs:
      'an NLI cross-encoder (nli-pairs) needs config.json with a *ForSequenceClassification architecture and an entailment label (or nli_config.json)',
  },
  fetch: {
    settings: 'config.json',
    optional: [NLI_CONFIG],
    split: false,
    oneGraph: 'an NLI cross-encoder is one graph',
    help: `- an NLI cross-encoder (nli-pairs, by nli_config.json or a config.json whose architecture is a
  *ForSequenceClassification): config.json, nli_config.json, the tokenizer files (spm.model and
  added_tokens.json too) and the variant's ONNX file with its external data.`,
  },
  rows: rowParts(async () => (await import('./family.js')).nliRows),
  refusals: [NliHypothesisTooLong],
});
