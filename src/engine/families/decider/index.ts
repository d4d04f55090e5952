// The decider-labels family (docs/families/decider-labels.md): a label-token decision model run by
// the decoder engine under its own prompt contract.
export { CONTEXT_TOKENS, deciderLayout, type DeciderLayout, type DeciderRow, type DeciderTokenizer } from './layout.js';
export { computeLabelTable, NARROW, WIDE, type LabelTable } from './labels.js';
export { DeciderRefusal, MAX_CHOICE, MAX_LEVELS, stripLevelNumber } from './question.js';
export { annotatedJson, stateText } from './state.js';
export { planDecider, deciderTokenizer, type DeciderSettings } from './plan.js';
export { deciderLogps, logSigmoid, type DeciderTemperatures } from './readout.js';
export { DECIDER_FIELDS, DeciderDecisionSchema, readDeciderFolder, type DeciderFolder } from './config.js';
