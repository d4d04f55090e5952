// The decider-labels family (`decider-labels`): decider's label-token contract on an ordinary
// causal-LM export, planned and read by the decoder engine (the state's KV reused), known by its
// decision.json's layout id. docs/families/decider-labels.md.
import { contractParts, defineFamily } from '../descriptor.js';
import { DeciderDecisionSchema, readDeciderFolder } from './config.js';
import { planDecider, type DeciderSettings } from './plan.js';
import { DeciderRefusal } from './question.js';
import { deciderLogps } from './readout.js';

export const deciderLabels = defineFamily({
  name: 'decider-labels',
  engine: 'decoder-engine',
  reuses: 'prefix',
  decision: DeciderDecisionSchema,
  contract: contractParts<DeciderSettings>({
    what: 'its own prompt contract',
    read(dir, codec) {
      const read = readDeciderFolder(dir, (text) => codec.encodeText(text, undefined, true));
      return {
        settings: { labels: read.labels },
        notes: read.notes,
        read: (asked, logps) => deciderLogps(asked, logps, read.temperatures),
      };
    },
    plan: planDecider,
  }),
  refusals: [DeciderRefusal],
});
