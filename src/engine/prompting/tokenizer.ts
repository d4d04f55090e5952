// Tokenizer + chat template of one model folder, as transformers.js does it:
// @huggingface/tokenizers for tokenization, @huggingface/jinja for the chat template. Caller
// content is data (encodeChat): only the template's own added tokens are control tokens.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { Template } from '@huggingface/jinja';
import { ModelLoadError } from '../errors.js';
import { ContentEscape, escapeRegExp } from './escape.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export class TextCodec {
  private readonly template: Template | undefined;
  /** Added tokens (specials and others) split out of the text before the BPE model runs. */
  private readonly addedPattern: RegExp | undefined;
  private readonly addedIds = new Map<string, number>();
  private readonly addedIdSet = new Set<number>();
  /** Added tokens that take the whitespace before (lstrip) or after (rstrip) them. */
  private readonly lstrip = new Set<string>();
  private readonly rstrip = new Set<string>();
  private readonly escaper: ContentEscape;
  private longestToken: number | undefined;
  private systemRole: boolean | undefined;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly config: Record<string, unknown>,
  ) {
    const chatTemplate = pickTemplate(config.chat_template);
    this.template = chatTemplate ? new Template(chatTemplate) : undefined;
    for (const [id, token] of tokenizer.get_added_tokens_decoder()) {
      this.addedIds.set(token.content, id);
      this.addedIdSet.add(id);
      if (token.lstrip) this.lstrip.add(token.content);
      if (token.rstrip) this.rstrip.add(token.content);
    }
    const contents = [...this.addedIds.keys()].sort((a, b) => b.length - a.length);
    if (contents.length > 0) this.addedPattern = new RegExp(`(${contents.map(escapeRegExp).join('|')})`);
    this.escaper = new ContentEscape([...this.addedIds.keys()]);
  }

  static async load(dir: string): Promise<TextCodec> {
    let tokenizerJson: unknown;
    let config: Record<string, unknown>;
    try {
      tokenizerJson = JSON.parse(await readFile(join(dir, 'tokenizer.json'), 'utf8'));
      config = JSON.parse(await readFile(join(dir, 'tokenizer_config.json'), 'utf8'));
    } catch (error) {
      throw new ModelLoadError(
        `${dir}: cannot read tokenizer.json / tokenizer_config.json (${(error as Error).message})`,
      );
    }
    // Recent exports keep the template only in chat_template.jinja (or chat_template.json).
    config.chat_template ??= await templateFile(dir);
    return new TextCodec(new Tokenizer(tokenizerJson as object, config), config);
  }

  get hasChatTemplate(): boolean {
    return this.template !== undefined;
  }

  /**
   * Whether the template renders a system turn with its content (some raise on a system message,
   * as Gemma's do; one that dropped it would lose the state). Decided once, on first use.
   */
  get acceptsSystemRole(): boolean {
    if (this.systemRole === undefined) {
      const probe = 'assay system-role probe';
      try {
        this.systemRole = this.renderChat(
          [
            { role: 'system', content: probe },
            { role: 'user', content: 'x' },
          ],
          true,
        ).includes(probe);
      } catch {
        this.systemRole = false;
      }
    }
    return this.systemRole;
  }

  /** Whether the id is an added token (a control token such as <|im_end|>): prompts are cut right after one. */
  isAddedToken(id: number): boolean {
    return this.addedIdSet.has(id);
  }

  /** The tokenizer_config's eos_token, when it names a single token. */
  get eosTokenId(): number | undefined {
    const eos = tokenString(this.config.eos_token);
    return eos ? this.tokenId(eos) : undefined;
  }

  /** The id of a single added or vocabulary token, if the string is one. */
  tokenId(token: string): number | undefined {
    return this.addedIds.get(token) ?? this.tokenizer.token_to_id(token);
  }

  /**
   * Token ids exactly as the tokenizer encodes the whole text in one go (no special tokens added
   * around it): every added-token string in it is that control token. For text the template wrote;
   * caller content goes through encodeChat / encodeText.
   */
  encode(text: string, memo?: Map<string, number[]>): number[] {
    return this.encodeSplit(text, (part, first) => this.encodeText(part, memo, first));
  }

  /**
   * Token ids of text taken as data: added-token strings in it (`<|im_end|>`, `<think>`, every
   * one of tokenizer.json's added_tokens, special or not) are tokenized as their text, never as
   * the control token — as Hugging Face tokenizers do with `split_special_tokens=True` (which
   * leaves non-special added tokens matched; here none is). `first`: the text starts the prompt
   * (a Metaspace pre-tokenizer prepends its space only there). `memo` (one per request: nothing
   * outlives it) lets a state shared by many prompts be tokenized once.
   */
  encodeText(text: string, memo?: Map<string, number[]>, first = false): number[] {
    const known = first ? undefined : memo?.get(text);
    if (known) return known;
    let ids: number[];
    if (text.length < LONG_RUN) ids = this.encodeData(text, first);
    else {
      // The JS BPE is quadratic in the length of one pre-tokenized word (300,000 spaces took 2-15 s)
      // and caches only short words: stretches of LONG_RUN or more characters without a change
      // between whitespace and non-whitespace are cut into LONG_RUN-character pieces, each
      // encoded on its own (and cached): linear in the text, exact for text without such stretches.
      // A piece equal to the one before (a run of one character) reuses its ids: 8 MiB of one
      // character took 2 s of per-call overhead, 0.1 s so.
      ids = [];
      let last: [string, number[]] = ['', []];
      splitLongRuns(text).forEach((piece, i) => {
        // (The first piece of a first text is encoded as one: the second is encoded anew.)
        if (piece !== last[0] || i === 1) last = [piece, this.encodeData(piece, first && i === 0)];
        for (const id of last[1]) ids.push(id);
      });
    }
    if (!first) memo?.set(text, ids);
    return ids;
  }

  /**
   * The tokens of a chat rendered by the template: the template's own control tokens at the
   * template's places, and every message's content tokenized as data (encodeText), whatever
   * added-token strings it holds. The pieces between control tokens (template text and content
   * together) are encoded whole, so a cut right after a control token is exact.
   */
  encodeChat(messages: ChatMessage[], addGenerationPrompt: boolean, memo?: Map<string, number[]>): number[] {
    const escaped = messages.map((m) => ({ ...m, content: this.escaper.escape(m.content) }));
    const rendered = this.renderChat(escaped, addGenerationPrompt);
    return this.encodeSplit(rendered, (part, first) => this.encodeText(this.escaper.unescape(part), memo, first));
  }

  decode(ids: number[]): string {
    return ids.length === 0 ? '' : this.tokenizer.decode(ids, { skip_special_tokens: false });
  }

  /** The raw tokenizer, for checks that must compare against it. */
  encodeWhole(text: string): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: false }).ids;
  }

  renderChat(messages: ChatMessage[], addGenerationPrompt: boolean): string {
    if (!this.template) throw new ModelLoadError('tokenizer_config.json has no chat_template');
    return this.template.render({
      messages,
      add_generation_prompt: addGenerationPrompt,
      enable_thinking: false,
      bos_token: tokenString(this.config.bos_token),
      eos_token: tokenString(this.config.eos_token),
      pad_token: tokenString(this.config.pad_token),
      unk_token: tokenString(this.config.unk_token),
    });
  }

  /** The longest vocabulary token, in bytes: a text of n bytes has at least n / this many tokens. */
  get maxTokenBytes(): number {
    if (this.longestToken === undefined) {
      // Byte-level BPE vocabularies spell each byte as one character.
      let longest = 1;
      for (const token of (this.tokenizer.get_vocab() as Map<string, number>).keys())
        if (token.length > longest) longest = token.length;
      this.longestToken = longest;
    }
    return this.longestToken;
  }

  /**
   * The text split at added tokens (leftmost, longest first, as the tokenizer splits), each added
   * token its id, the text between them `encodePart`'s ids; an added token that strips whitespace
   * on a side takes it from its neighbour, as the tokenizer does.
   */
  private encodeSplit(text: string, encodePart: (part: string, first: boolean) => number[]): number[] {
    if (!this.addedPattern) return encodePart(text, true);
    const parts = text.split(this.addedPattern); // text, token, text, token, …, text
    const ids: number[] = [];
    for (let i = 0; i < parts.length; i++) {
      let part = parts[i]!;
      if (i % 2 === 1) {
        ids.push(this.addedIds.get(part)!);
        continue;
      }
      if (i > 0 && this.rstrip.has(parts[i - 1]!)) part = part.trimStart();
      if (i + 1 < parts.length && this.lstrip.has(parts[i + 1]!)) part = part.trimEnd();
      if (part !== '') for (const id of encodePart(part, i === 0)) ids.push(id);
    }
    return ids;
  }

  /**
   * What the tokenizer does to a text without added tokens in it (tokenizers.js's encode_text past
   * its added-token split, through the Tokenizer's public normalizer, pre_tokenizer and model): the
   * added tokens are simply never looked for.
   */
  private encodeData(text: string, first: boolean): number[] {
    const tokenizer = this.tokenizer;
    let t = text;
    if (this.config.remove_space === true) t = t.trim().split(/\s+/).join(' ');
    if (this.config.do_lowercase_and_remove_accent === true) t = t.toLowerCase().replace(/\p{M}/gu, '');
    if (tokenizer.normalizer) t = tokenizer.normalizer(t);
    if (t.length === 0) return [];
    const words = tokenizer.pre_tokenizer ? tokenizer.pre_tokenizer(t, { section_index: first ? 0 : 1 }) : [t];
    const model = tokenizer.model!;
    return (model(words) as string[]).map((token) => model.tokens_to_ids.get(token) ?? model.unk_token_id!);
  }
}

/** Stretches this long are cut before BPE; see encodeText. */
export const LONG_RUN = 128;

function isSpace(c: number): boolean {
  return (
    (c >= 9 && c <= 13) ||
    c === 32 ||
    c === 0x85 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

const LETTER = /\p{L}/u;
const SYMBOL = /[^\p{L}\p{N}\s]/u;

/**
 * The text cut every LONG_RUN characters inside any stretch of whitespace, or of non-whitespace,
 * that is at least that long (counted from the stretch's start; the stretch's tail stays with the
 * text after it); a stretch of non-whitespace at the first letter-to-symbol boundary past that,
 * if one comes within LONG_RUN more characters. A plain scan, linear in the text: no
 * pre-tokenizer word of ordinary text is that long, so only such stretches (runs of one
 * character, blobs without spaces) are cut.
 */
export function splitLongRuns(text: string): string[] {
  const pieces: string[] = [];
  let from = 0;
  let runStart = 0;
  let runSpace = text.length > 0 && isSpace(text.charCodeAt(0));
  for (let i = 0; i < text.length; i++) {
    const space = isSpace(text.charCodeAt(i));
    if (space !== runSpace) {
      runSpace = space;
      runStart = i;
    } else if (i - runStart >= LONG_RUN && i - from >= LONG_RUN) {
      const c = text.charCodeAt(i);
      if (c >= 0xdc00 && c <= 0xdfff) continue; // never split a surrogate pair: cut one later
      // Without whitespace, wait (up to LONG_RUN more characters) for a letter followed by a
      // symbol: a word boundary of the GPT-2, Llama 3 and Qwen pre-tokenizers, so the cut is exact
      // there (markup, or added-token strings taken as text: `<|im_end|><|im_end|>…`).
      if (!space && i - from < 2 * LONG_RUN - 1 && !(LETTER.test(text[i - 1]!) && SYMBOL.test(text[i]!))) continue;
      pieces.push(text.slice(from, i));
      from = i;
    }
  }
  pieces.push(text.slice(from));
  return pieces.filter((p) => p.length > 0);
}

/** The chat template of chat_template.jinja, else of chat_template.json ({"chat_template": ...}). */
async function templateFile(dir: string): Promise<unknown> {
  const jinja = join(dir, 'chat_template.jinja');
  if (existsSync(jinja)) return readFile(jinja, 'utf8');
  const json = join(dir, 'chat_template.json');
  if (!existsSync(json)) return undefined;
  try {
    return (JSON.parse(await readFile(json, 'utf8')) as { chat_template?: unknown }).chat_template;
  } catch (error) {
    throw new ModelLoadError(`${json}: invalid JSON (${(error as Error).message})`);
  }
}

function pickTemplate(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const named = value.find((t) => t && typeof t === 'object' && (t as { name?: string }).name === 'default');
    return (named as { template?: string } | undefined)?.template;
  }
  return undefined;
}

function tokenString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  return '';
}
