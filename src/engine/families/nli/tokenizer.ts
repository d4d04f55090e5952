// The NLI pairs family's view of a model folder's tokenizer (@huggingface/tokenizers, as the engine
// loads every tokenizer.json): plain encoding of each side of a pair, the post-processor's pair
// template, whether the model reads token_type_ids, the pad id, and every special-token string.
// A tokenizer.json may carry its own `truncation` and `padding` settings (exported from a
// pipeline's tokenizer): the loader disables both, so a row is never silently cut or padded; the
// layout alone truncates, exactly as the reference does, and says so.
import { Tokenizer } from '@huggingface/tokenizers';
import { ModelLoadError } from '../../errors.js';
import { withoutTruncation } from '../rows/tokenizer.js';
import { specialTokenStrings, tokenName } from '../shared/specials.js';
import type { NliTokenizer, PairPiece } from './layout.js';

/** The pair template of tokenizer.json's post_processor (TemplateProcessing, or BERT's / RoBERTa's). */
export function pairTemplate(json: Record<string, unknown>): PairPiece[] {
  const pp = json.post_processor as Record<string, unknown> | null | undefined;
  const fail = (why: string): never => {
    throw new ModelLoadError(`tokenizer.json: post_processor: ${why}`);
  };
  if (!pp || typeof pp !== 'object') return fail('expected one that joins a pair (TemplateProcessing)');
  if (pp.type === 'BertProcessing' || pp.type === 'RobertaProcessing') {
    const [, cls] = pp.cls as [string, number];
    const [, sep] = pp.sep as [string, number];
    const second: PairPiece[] = pp.type === 'RobertaProcessing' ? [{ special: [sep], typeId: 0 }] : [];
    const bType = pp.type === 'BertProcessing' ? 1 : 0;
    return [
      { special: [cls], typeId: 0 },
      { sequence: 'A', typeId: 0 },
      { special: [sep], typeId: 0 },
      ...second,
      { sequence: 'B', typeId: bType },
      { special: [sep], typeId: bType },
    ];
  }
  if (pp.type !== 'TemplateProcessing') return fail(`${String(pp.type)} is not read (expected TemplateProcessing)`);
  const specials = (pp.special_tokens ?? {}) as Record<string, { ids?: number[] }>;
  const pair = pp.pair;
  if (!Array.isArray(pair)) return fail('TemplateProcessing without a pair template');
  return pair.map((piece: Record<string, { id: string; type_id?: number }>): PairPiece => {
    if (piece.SpecialToken) {
      const ids = specials[piece.SpecialToken.id]?.ids;
      if (!Array.isArray(ids)) return fail(`special token ${piece.SpecialToken.id} has no ids`);
      return { special: ids, typeId: piece.SpecialToken.type_id ?? 0 };
    }
    if (piece.Sequence && (piece.Sequence.id === 'A' || piece.Sequence.id === 'B'))
      return { sequence: piece.Sequence.id, typeId: piece.Sequence.type_id ?? 0 };
    return fail(`unexpected piece ${JSON.stringify(piece)} in the pair template`);
  });
}

export interface LoadedNliTokenizer extends NliTokenizer {
  padId: number;
  /** Settings of tokenizer.json that were disabled (a load warning names them). */
  disabled: Array<'truncation' | 'padding'>;
}

/**
 * The family's tokenizer from tokenizer.json and tokenizer_config.json (as parsed objects).
 * token_type_ids are read when `model_input_names` lists them, or when it is absent (the
 * transformers default lists them, as DeBERTa-v3's tokenizer does; ModernBERT's leaves them out).
 */
export function nliTokenizer(
  tokenizerJson: Record<string, unknown>,
  config: Record<string, unknown>,
): LoadedNliTokenizer {
  const { json, disabled } = withoutTruncation(tokenizerJson);
  const tokenizer = new Tokenizer(json, config);
  const padName = tokenName(config.pad_token, '[PAD]');
  const padId = tokenizer.token_to_id(padName);
  if (padId === undefined) throw new ModelLoadError(`tokenizer has no pad token ${JSON.stringify(padName)}`);
  const names = config.model_input_names;
  const typeIds = Array.isArray(names) ? names.includes('token_type_ids') : true;
  return {
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    pair: pairTemplate(json),
    typeIds,
    specialTokens: specialTokenStrings(tokenizer),
    padId,
    disabled,
  };
}
