// The label-tokens family (`label-tokens`): a label-token decision model whose prompt contract its
// folder's decision.json carries, planned and read by the decoder engine (the state's KV reused).
// docs/families/label-tokens.md.
import { contractParts, defineFamily } from '../descriptor.js';
import { LabelTokensDecisionSchema, readLabelTokensFolder } from './folder.js';
import { contractName } from './name.js';
import { planLabelTokens } from './plan.js';
import { labelTokensLogps } from './readout.js';
import { LabelTokensRefusal } from './refusal.js';
import type { LabelTokensSettings } from './settings.js';

export const labelTokens = defineFamily({
  name: 'label-tokens',
  engine: 'decoder-engine',
  reuses: 'prefix',
  decision: LabelTokensDecisionSchema,
  contract: contractParts<LabelTokensSettings>({
    what: 'the prompt contract of its decision.json',
    read(dir, codec) {
      const read = readLabelTokensFolder(dir, codec);
      const order = read.settings.noul.order;
      return {
        settings: read.settings,
        notes: read.notes,
        read: (asked, logps) => labelTokensLogps(asked, logps, read.temperatures, order),
      };
    },
    plan: planLabelTokens,
  }),
  refusals: [LabelTokensRefusal],
  // A folder's contract says which model's it is.
  describe: contractName,
});
