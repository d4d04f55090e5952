// Special tokens as the families' layouts handle them: their names in tokenizer_config.json, and
// their strings in user text, which become spaces (content is data: the tokenizer would otherwise
// read a literal `[SEP]` in a state as the control token).
import type { Tokenizer } from '@huggingface/tokenizers';

/** A token name of tokenizer_config.json: a string, or an AddedToken object with `content`. */
export function tokenName(value: unknown, fallback: string): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string')
    return (value as { content: string }).content;
  return fallback;
}

/** Every added token of the tokenizer marked `special`, by its string. */
export function specialTokenStrings(tokenizer: Tokenizer): string[] {
  return [...tokenizer.get_added_tokens_decoder().values()].filter((t) => t.special).map((t) => t.content);
}

/** Replaces every one of `strings` in a text by a space, longest first, in one pass. */
export function specialsNeutraliser(strings: readonly string[]): (text: string) => string {
  const unique = [...new Set(strings.filter((s) => s !== ''))].sort((a, b) => b.length - a.length);
  if (unique.length === 0) return (text) => text;
  const pattern = new RegExp(unique.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return (text) => text.replace(pattern, ' ');
}
