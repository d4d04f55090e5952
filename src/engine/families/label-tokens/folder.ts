// Reading a label-tokens folder (docs/families/label-tokens.md, "The file"): decision.json's
// `contract` (checked: contract.ts), the label tables from the tokenizer (tables.ts), the chat
// split (the folder's chat template rendered around a sentinel user message) and calibration.json
// (the one rule of shared/settings.ts). What it read is the load note.
import { join } from 'node:path';
import { fileObject } from '../../../protocol/index.js';
import { ModelLoadError } from '../../errors.js';
import type { ChatMessage, TextCodec } from '../../prompting/tokenizer.js';
import { DECISION_FILE } from '../files.js';
import { LayoutField, readCalibration, readDecisionFile, type TypeTemperatures } from '../shared/settings.js';
import { checkedContract, ContractSchema } from './contract.js';
import { dataEncoder } from './plan.js';
import { labelTokensSettings, type ChatSplit, type LabelTokensSettings } from './settings.js';
import { labelTables } from './tables.js';

/** A label-tokens folder's decision.json: the layout id and the contract. */
export const LabelTokensDecisionSchema = fileObject({ layout: LayoutField, contract: ContractSchema });

/** The user message the chat template is rendered with, to find where the question segment goes. */
export const USER_SENTINEL = 'ASSAY-LABEL-TOKENS-USER-MESSAGE';

export interface LabelTokensFolder {
  settings: LabelTokensSettings;
  temperatures: TypeTemperatures;
  /** What the load reports. */
  notes: string[];
}

/** The chat template's text before and after the user message. */
function chatSplit(codec: TextCodec, system: string, where: string): ChatSplit {
  if (!codec.hasChatTemplate)
    throw new ModelLoadError(`${where}: contract.chat is set, but the folder has no chat template`);
  const messages: ChatMessage[] = [
    ...(system === '' ? [] : [{ role: 'system' as const, content: system }]),
    { role: 'user', content: USER_SENTINEL },
  ];
  const text = codec.renderChat(messages, true);
  const parts = text.split(USER_SENTINEL);
  if (parts.length !== 2)
    throw new ModelLoadError(
      `${where}: contract.chat: the chat template writes the user message ${parts.length - 1} times, not once`,
    );
  return { pre: parts[0]!, post: parts[1]! };
}

export function readLabelTokensFolder(dir: string, codec: TextCodec): LabelTokensFolder {
  const where = join(dir, DECISION_FILE);
  const contract = checkedContract(readDecisionFile(dir, LabelTokensDecisionSchema).contract, where);
  const labels = labelTables(contract.labels, dataEncoder(codec), where);
  const chat = contract.chat ? chatSplit(codec, contract.chat.system, where) : null;
  const settings = labelTokensSettings(contract, chat, labels, (text) => codec.encode(text));
  const calibration = readCalibration(dir);
  const notes = [
    `contract ${JSON.stringify(contract.name)} (${contract.types.join(', ')}; ${chat ? 'chat template' : 'no chat template'}; render ${contract.render})`,
    `choice up to ${settings.maxOptions} options, score up to ${labels.score.ids.length} levels, noul labels ${labels.noul.strings.slice(0, 2).join('/')}`,
    ...calibration.notes,
  ];
  return { settings, temperatures: calibration.temperatures, notes };
}
