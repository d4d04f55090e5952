// Stand-ins for the two tokenizers of the NLI pairs family, for tests only: no DeBERTa-v3 or
// ModernBERT tokenizer.json is available offline (not in node_modules, not on the npm registry).
//
// - DeBERTa-v3 style: a small Unigram (sentencepiece) model inside tokenizer.json, as the
//   transformers converter writes DeBERTa-v3's: Metaspace pre-tokenizer ("▁", prepended always),
//   a Strip / NFKC / collapse-spaces normalizer (NFKC stands in for the binary precompiled
//   charsmap), specials [PAD] 0 [CLS] 1 [SEP] 2 [UNK] 3 and [MASK] after the vocabulary, the pair
//   template `[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1`. The vocabulary is built here: English words of
//   the goldens, every printable ASCII character (with and without "▁"), some accented letters and
//   some CJK characters; anything else is [UNK], as in DeBERTa-v3's own vocabulary.
// - ModernBERT style: the Laya replica (a real byte-level BPE with ModernBERT's specials,
//   tools/families/laya/tokenizer.ts) with a pair template, and `model_input_names` without
//   token_type_ids, as ModernBERT's tokenizer_config.json has.
// Both files carry their own `truncation` and `padding` settings (as tokenizer.json files saved
// from a configured pipeline do), which the family's loader must disable.
//
//   npx tsx tools/families/nli/tokenizers.ts DIR   writes DIR/{deberta,modernbert}/tokenizer.json and tokenizer_config.json
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { layaTestId, layaTestTokenizer } from '../laya/tokenizer.js';
import {
  addedToken,
  bertTemplate,
  type TestTokenizer,
  tokenizerMain,
  writeTestTokenizer,
} from '../kit/tokenizer-kit.js';

/** Truncation and padding as a saved pipeline tokenizer carries them: they would cut rows at 16 tokens. */
const BAKED = {
  truncation: { direction: 'Right', max_length: 16, strategy: 'LongestFirst', stride: 0 },
  padding: {
    strategy: { Fixed: 16 },
    direction: 'Right',
    pad_to_multiple_of: null,
    pad_id: 0,
    pad_type_id: 0,
    pad_token: '[PAD]',
  },
};

const WORDS = `the a an and or of to in on for is are was were be been it this that with as at by from not no yes
order arrived two days late box damaged customer asks refund money back wrote form does ask topic main what
delivery shipping delays damage billing invoices product item itself option named ten two bee same how severe
complaint issue minor serious severity none some all calm annoyed upset level text example about statement holds
hold first second third turn newest hello there one short state happy very good bad fine question answer
request requested mentioned only complains signal strength null true false invoice café naïve Straße Zürich
quote break tab line The This Does What How Order Is Are Was`;

const CJK = '注文番号返金配送遅延破損請求製品商品顧客箱日届希望主話題何がはをにのでてしましたすかいれそもと一二三';
const ACCENTED = 'éèêëïîüöäàçñßÉØ';

function pieces(): Array<[string, number]> {
  const vocab: Array<[string, number]> = [
    ['[PAD]', 0],
    ['[CLS]', 0],
    ['[SEP]', 0],
    ['[UNK]', 0],
    ['▁', -3],
  ];
  const seen = new Set(vocab.map(([p]) => p));
  const add = (p: string, score: number): void => {
    if (!seen.has(p)) {
      seen.add(p);
      vocab.push([p, score]);
    }
  };
  for (const w of WORDS.split(/\s+/).filter(Boolean)) add(`▁${w}`, -4 - w.length / 100);
  for (const suffix of ['ing', 'ed', 's', 'er', 'ly', 'tion']) add(suffix, -5);
  for (let c = 33; c < 127; c++) {
    add(`▁${String.fromCharCode(c)}`, -5.5);
    add(String.fromCharCode(c), -6);
  }
  for (const ch of ACCENTED + CJK) {
    add(ch, -7);
    add(`▁${ch}`, -6.5);
  }
  return vocab;
}

/** tokenizer.json and tokenizer_config.json of the DeBERTa-v3-style replica. */
export function debertaTestTokenizer(): TestTokenizer {
  const vocab = pieces();
  const special = (id: number, content: string) => addedToken(id, content, true);
  const maskId = vocab.length;
  const tokenizer = {
    version: '1.0',
    ...BAKED,
    added_tokens: [
      special(0, '[PAD]'),
      special(1, '[CLS]'),
      special(2, '[SEP]'),
      special(3, '[UNK]'),
      special(maskId, '[MASK]'),
    ],
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'Strip', strip_left: true, strip_right: true },
        { type: 'NFKC' },
        { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
      ],
    },
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    post_processor: bertTemplate(1, 2, 1),
    decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: false },
  };
  const config = {
    tokenizer_class: 'DebertaV2Tokenizer',
    do_lower_case: false,
    split_by_punct: false,
    bos_token: '[CLS]',
    eos_token: '[SEP]',
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    pad_token: '[PAD]',
    unk_token: '[UNK]',
    mask_token: '[MASK]',
    model_max_length: 512,
  };
  return { tokenizer, config };
}

/** tokenizer.json and tokenizer_config.json of the ModernBERT-style replica. */
export function modernbertTestTokenizer(): TestTokenizer {
  const { tokenizer: laya, config } = layaTestTokenizer();
  const tokenizer = {
    ...laya,
    ...BAKED,
    padding: { ...BAKED.padding, pad_id: 151649 },
    post_processor: bertTemplate(layaTestId('[CLS]'), layaTestId('[SEP]'), 1),
  };
  return { tokenizer, config: { ...config, model_input_names: ['input_ids', 'attention_mask'] } };
}

export const NLI_TEST_TOKENIZERS = { deberta: debertaTestTokenizer, modernbert: modernbertTestTokenizer } as const;

/** Writes both replicas into `dir`/deberta and `dir`/modernbert. */
export function writeNliTestTokenizers(dir: string): void {
  for (const [name, make] of Object.entries(NLI_TEST_TOKENIZERS)) writeTestTokenizer(join(dir, name), make());
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  tokenizerMain('tools/families/nli/tokenizers.ts', (dir) => {
    writeNliTestTokenizers(dir);
    return `wrote ${dir}/deberta and ${dir}/modernbert`;
  });
