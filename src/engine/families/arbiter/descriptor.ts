// The Arbiter family (`arbiter-fixed`): a causal trunk with a fixed 24-slot head read at the row's
// last token, known by its decision.json's layout id; run by the causal-row runner.
// docs/families/arbiter-fixed.md.
import { describeReuse } from '../causal/describe.js';
import { defineFamily, rowParts } from '../descriptor.js';
import { DECISION_FILE } from '../files.js';
import { ArbiterDecisionSchema } from './config.js';
import { ArbiterRefused } from './layout.js';

export const arbiter = defineFamily({
  name: 'arbiter-fixed',
  engine: 'causal-rows',
  reuses: 'state snapshot',
  describe: describeReuse,
  decision: ArbiterDecisionSchema,
  fetch: { settings: DECISION_FILE, optional: [], split: false, oneGraph: 'an Arbiter model is one graph' },
  rows: rowParts(async () => (await import('./family.js')).arbiterRows),
  refusals: [ArbiterRefused],
});
