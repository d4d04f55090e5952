// The label-tokens family (docs/families/label-tokens.md): a label-token decision model run by the
// decoder engine under the prompt contract its folder's decision.json carries.
export { parseContract, templateParts, type LabelContract, type QuestionType } from './contract.js';
export { labelTokensLayout, type LabelTokensLayout, type LabelTokensRow } from './layout.js';
export { LabelTokensRefusal, type RefusalLimit } from './refusal.js';
export { labelTokensSettings, type LabelTokensSettings } from './settings.js';
export { dataEncoder, planLabelTokens } from './plan.js';
export { labelTokensLogps } from './readout.js';
export { readLabelTokensFolder, USER_SENTINEL, type LabelTokensFolder } from './folder.js';
