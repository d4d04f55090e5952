// The Laya layout's view of a model folder's tokenizer (@huggingface/tokenizers, as the engine
// loads every tokenizer.json): plain encoding, the three control tokens the row uses, and every
// special-token string, which the layout neutralises in user text.
import type { Tokenizer } from '@huggingface/tokenizers';
import { ModelLoadError } from '../../errors.js';
import { specialTokenStrings, tokenName } from '../shared/specials.js';
import type { LayaTokenizer } from './layout.js';

/**
 * `encode` is the tokenizer's own, with no special tokens added: added tokens in the text are
 * split out as the tokenizer does (the layout has already replaced the special ones by spaces, so
 * only non-special added tokens such as ModernBERT's `|||IP_ADDRESS|||` can still match).
 */
export function layaTokenizer(tokenizer: Tokenizer, config: Record<string, unknown>): LayaTokenizer {
  const id = (role: string, fallback: string): [string, number] => {
    const name = tokenName(config[`${role}_token`], fallback);
    const found = tokenizer.token_to_id(name);
    if (found === undefined) throw new ModelLoadError(`tokenizer has no ${role} token ${JSON.stringify(name)}`);
    return [name, found];
  };
  const [, clsId] = id('cls', '[CLS]');
  const [, sepId] = id('sep', '[SEP]');
  const [maskToken, maskId] = id('mask', '[MASK]');
  const specialTokens = specialTokenStrings(tokenizer);
  return {
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    clsId,
    sepId,
    maskId,
    maskToken,
    specialTokens,
  };
}
