// A stand-in for Gemma 3's tokenizer (the Arbiter family's base tokenizer), for tests only: no
// Gemma tokenizer.json is available offline. It is of Gemma's kind, a SentencePiece-style BPE:
// spaces become "▁" and words split before each (Metaspace, nothing prepended), unknown characters fall back to
// byte tokens <0x00>…<0xFF>; Gemma 3's special tokens by name, <pad> 0, <eos> 1, <bos> 2, <unk> 3,
// <mask> 4 at Gemma's ids, <start_of_turn>, <end_of_turn>, <start_of_image>, <end_of_image>,
// <image_soft_token> after the vocabulary, and one added token that is not special. The merges
// spell the prompt's words and a few common ones letter by letter, so "▁a" is one token and
// "State" a few. The layout rules do not depend on the vocabulary: ids differ from Gemma's.
//
//   npx tsx tools/families/arbiter/gemma-tokenizer.ts DIR   writes DIR/tokenizer.json and tokenizer_config.json
import { pathToFileURL } from 'node:url';
import { addedToken, type TestTokenizer, tokenizerMain, writeTestTokenizer } from '../kit/tokenizer-kit.js';

/** Gemma 3's first five ids. */
const FIRST = ['<pad>', '<eos>', '<bos>', '<unk>', '<mask>'] as const;
/** Gemma 3's chat and image specials (their ids here follow the vocabulary). */
const LATER = ['<start_of_turn>', '<end_of_turn>', '<start_of_image>', '<end_of_image>', '<image_soft_token>'];
/** An added token that is not special. */
const PLAIN = '<unused0>';

/** Words the merges spell (each with and without its leading "▁"). */
const WORDS = [
  'State',
  'Question',
  'Options',
  'Answer',
  'Yes',
  'True',
  'No',
  'False',
  'the',
  'order',
  'refund',
  'late',
  'customer',
  'asks',
  'box',
  'arrived',
  'damaged',
  'is',
  'it',
  'a',
  'an',
  'for',
  'and',
  'What',
  'main',
  'topic',
  'How',
  'severe',
  'complaint',
  'option',
  'level',
  'true',
  'false',
  'none',
];

export function gemmaTestTokenizer(): TestTokenizer {
  const vocab: Record<string, number> = {};
  const add = (piece: string): void => {
    if (!(piece in vocab)) vocab[piece] = Object.keys(vocab).length;
  };
  FIRST.forEach(add);
  for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  add('▁');
  for (let c = 33; c < 127; c++) add(String.fromCharCode(c));
  const merges: Array<[string, string]> = [];
  for (const word of WORDS.flatMap((w) => [w, `▁${w}`])) {
    for (const ch of word) add(ch);
    const chars = [...word];
    for (let i = 1; i < chars.length; i++) {
      const left = chars.slice(0, i).join('');
      const merged = chars.slice(0, i + 1).join('');
      if (!(merged in vocab)) {
        merges.push([left, chars[i]!]);
        add(merged);
      }
    }
  }
  const size = Object.keys(vocab).length;
  const added = [
    ...FIRST.map((t) => addedToken(vocab[t]!, t, true)),
    ...LATER.map((t, i) => addedToken(size + i, t, true)),
    addedToken(size + LATER.length, PLAIN, false),
  ];
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: true },
    post_processor: null,
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
      ],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const config = {
    tokenizer_class: 'GemmaTokenizerFast',
    bos_token: '<bos>',
    eos_token: '<eos>',
    pad_token: '<pad>',
    unk_token: '<unk>',
    mask_token: '<mask>',
    add_bos_token: true,
    add_eos_token: false,
    model_max_length: 131072,
  };
  return { tokenizer, config };
}

/** The vocabulary size, added tokens included (the replica's embedding rows). */
export function gemmaTestVocab(): number {
  const t = gemmaTestTokenizer().tokenizer.added_tokens as Array<{ id: number }>;
  return Math.max(...t.map((a) => a.id)) + 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  tokenizerMain('tools/families/arbiter/gemma-tokenizer.ts', (dir) => {
    writeTestTokenizer(dir, gemmaTestTokenizer());
    return `wrote ${dir}/tokenizer.json and tokenizer_config.json`;
  });
