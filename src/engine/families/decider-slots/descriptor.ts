// decider as exported with a slot head (`decider-slots`): the decider layout's rows, whole, each
// read at its slot for the whole label table, known by its decision.json's layout id; run by the
// causal-row runner. The decider's page in docs/families/, "As exported with a slot head".
import { DeciderRefusal } from '../decider/index.js';
import { describeReuse } from '../causal/describe.js';
import { defineFamily, rowParts } from '../descriptor.js';
import { DECISION_FILE } from '../files.js';
import { DeciderSlotsDecisionSchema } from './config.js';
import { SlotRowTooLong } from './rows.js';

export const deciderSlots = defineFamily({
  name: 'decider-slots',
  engine: 'causal-rows',
  reuses: 'state snapshot',
  describe: describeReuse,
  decision: DeciderSlotsDecisionSchema,
  fetch: { settings: DECISION_FILE, optional: [], split: false, oneGraph: 'a decider slot-head model is one graph' },
  rows: rowParts(async () => (await import('./family.js')).deciderSlotsRows),
  refusals: [SlotRowTooLong, DeciderRefusal],
});
