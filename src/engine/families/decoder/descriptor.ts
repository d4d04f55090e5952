// The decoder family (`decoder`): a generic instruction-tuned (chat) language model, asked under
// Assay's own prompt by the decoder engine (prompting/, execution/), the state's KV encoded once and
// reused across questions and requests. What any config.json or genai_config.json shows, when no
// other family's files do; the family of a folder nothing declares.
import { defineFamily } from '../descriptor.js';

export const decoder = defineFamily({
  name: 'decoder',
  // What other servers of these models call a plain LM read at its answer's logits.
  layoutIds: ['llm-logits'],
  engine: 'decoder-engine',
  reuses: 'prefix',
  detect: {
    by: (folder) =>
      folder.json('config.json') ? 'config.json' : folder.has('genai_config.json') ? 'genai_config.json' : undefined,
    last: true,
    needs: 'a decoder needs config.json (a Hugging Face / Optimum export) or genai_config.json',
  },
  refusals: [],
});
