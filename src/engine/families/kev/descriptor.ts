// The Kev pointer family (`kev-pointer`): a causal trunk read at each option's close and at the
// row's decide token, known by its decision.json's layout id; run by the causal-row runner.
// docs/families/kev-pointer.md.
import { describeReuse } from '../causal/describe.js';
import { defineFamily, rowParts } from '../descriptor.js';
import { DECISION_FILE } from '../files.js';
import { KevDecisionSchema } from './config.js';
import { KevRowTooLong } from './layout.js';

export const kev = defineFamily({
  name: 'kev-pointer',
  engine: 'causal-rows',
  reuses: 'state snapshot',
  describe: describeReuse,
  decision: KevDecisionSchema,
  fetch: { settings: DECISION_FILE, optional: [], split: false, oneGraph: 'a Kev model is one graph' },
  rows: rowParts(async () => (await import('./family.js')).kevRows),
  refusals: [KevRowTooLong],
});
