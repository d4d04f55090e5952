// A row family's tokenizer.json and tokenizer_config.json, read one way: at the folder's root or in
// tokenizer/ (as the authors' exporters write them), one error for a folder without one, and the
// file's own `truncation` and `padding` turned off (a row is never cut or padded behind the layout's
// back), which the load notes say.
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { ModelLoadError } from '../../errors.js';
import { TextCodec } from '../../prompting/tokenizer.js';
import { readJsonFile, tokenizerDir } from '../files.js';

export interface TokenizerFiles {
  /** The folder that holds tokenizer.json (the root, or tokenizer/). */
  dir: string;
  /** tokenizer.json, its truncation and padding set to null. */
  json: Record<string, unknown>;
  /** tokenizer_config.json ({} when absent). */
  config: Record<string, unknown>;
  /** The settings of tokenizer.json that were turned off. */
  disabled: Array<'truncation' | 'padding'>;
}

/** tokenizer.json with its own truncation and padding disabled, and which of them were set. */
export function withoutTruncation(json: Record<string, unknown>): {
  json: Record<string, unknown>;
  disabled: Array<'truncation' | 'padding'>;
} {
  const disabled = (['truncation', 'padding'] as const).filter((k) => json[k] !== undefined && json[k] !== null);
  return { json: { ...json, truncation: null, padding: null }, disabled };
}

/** The folder's tokenizer files; a folder without tokenizer.json fails the load. */
export function readTokenizerFiles(modelDir: string): TokenizerFiles {
  const dir = tokenizerDir(modelDir);
  const raw = readJsonFile(join(dir, 'tokenizer.json'));
  if (!raw) throw new ModelLoadError(`${modelDir}: no tokenizer.json (at the root or in tokenizer/)`);
  return { dir, ...withoutTruncation(raw), config: readJsonFile(join(dir, 'tokenizer_config.json')) ?? {} };
}

/** The load note on what was turned off (none when nothing was); `why` says who cuts instead. */
export function disabledNote(files: TokenizerFiles, why = 'the layout alone cuts'): string[] {
  return files.disabled.length ? [`tokenizer.json's own ${files.disabled.join(' and ')} disabled (${why})`] : [];
}

/**
 * The folder's tokenizer reading every text as data: each text on its own, no special tokens added,
 * an added-token string in caller text its ordinary tokens (never the control token).
 */
export function dataTokenizer(modelDir: string): {
  files: TokenizerFiles;
  codec: TextCodec;
  encode: (text: string) => number[];
} {
  const files = readTokenizerFiles(modelDir);
  const codec = new TextCodec(new Tokenizer(files.json, files.config), files.config);
  return { files, codec, encode: (text) => codec.encodeText(text, undefined, true) };
}
