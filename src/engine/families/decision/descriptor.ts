// The Decision endpoint family (`decision-endpoint`): a causal trunk read at each candidate's last
// token and the row's last, known by its decision.json's layout id; run by the causal-row runner.
// docs/families/decision-endpoint.md.
import { describeReuse } from '../causal/describe.js';
import { defineFamily, rowParts } from '../descriptor.js';
import { DECISION_FILE } from '../files.js';
import { DecisionSchema } from './config.js';
import { DecisionRefused } from './layout.js';

export const decision = defineFamily({
  name: 'decision-endpoint',
  engine: 'causal-rows',
  reuses: 'state snapshot',
  describe: describeReuse,
  decision: DecisionSchema,
  fetch: { settings: DECISION_FILE, optional: [], split: false, oneGraph: 'a Decision endpoint model is one graph' },
  rows: rowParts(async () => (await import('./family.js')).decisionRows),
  refusals: [DecisionRefused],
});
