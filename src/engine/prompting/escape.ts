// Content through the chat template without speaking in its voice: before rendering, each
// added-token string in caller content (`<|im_end|>`, `<think>`, …) is swapped for an escape that
// no added token matches; after rendering, the added tokens left in the text are the template's
// own, and each piece between them is unescaped back to its exact text, to be tokenized as data.
//
// Escapes are private-use characters (no tokenizer's added token holds them): ESC, then the
// token's index in hexadecimal digits U+E001–U+E010, then ESC. A content character in that range
// is itself escaped as ESC ESC c. A template that trims, cases or compares content sees no
// control token in it; one that cut content mid-escape would leave the escape's characters as text.

const ESC = '\uE000';
const DIGIT0 = 0xe001;
const RESERVED = /[\uE000-\uE010]/;
/** Contents this long are remembered (escape). */
const LONG = 4096;

export class ContentEscape {
  /** Any added token (leftmost, longest first, as the tokenizer splits) or a reserved character. */
  private readonly pattern: RegExp;
  private readonly probe: RegExp;
  private readonly index = new Map<string, number>();

  constructor(private readonly tokens: readonly string[]) {
    tokens.forEach((t, i) => this.index.set(t, i));
    const usable = [...tokens].filter((t) => t.length > 0 && !RESERVED.test(t)).sort((a, b) => b.length - a.length);
    const source = [...usable.map(escapeRegExp), '[\\uE000-\\uE010]'].join('|');
    this.pattern = new RegExp(source, 'g');
    this.probe = new RegExp(source);
  }

  /**
   * The last long content escaped and its escape: a request's state (its system turn) is escaped
   * once for all its prompts, between which only the short question texts change.
   */
  private last: [string, string] = ['', ''];

  /** The content with every added-token string (and reserved character) escaped. */
  escape(content: string): string {
    if (content.length >= LONG && content === this.last[0]) return this.last[1];
    const escaped = this.probe.test(content) ? this.replace(content) : content;
    if (content.length >= LONG) this.last = [content, escaped];
    return escaped;
  }

  private replace(content: string): string {
    return content.replace(this.pattern, (m) => {
      const i = this.index.get(m);
      if (i === undefined) return ESC + ESC + m;
      let digits = '';
      for (const d of i.toString(16)) digits += String.fromCharCode(DIGIT0 + parseInt(d, 16));
      return ESC + digits + ESC;
    });
  }

  /** Rendered text between the template's control tokens, back to the exact text of its content. */
  unescape(text: string): string {
    if (!text.includes(ESC)) return text;
    let out = '';
    let i = 0;
    for (let at = text.indexOf(ESC); at >= 0; at = text.indexOf(ESC, i)) {
      out += text.slice(i, at);
      if (text[at + 1] === ESC && at + 2 < text.length) {
        out += text[at + 2];
        i = at + 3;
        continue;
      }
      const close = text.indexOf(ESC, at + 1);
      const digits = close > at + 1 ? text.slice(at + 1, close) : '';
      const token = /^[\uE001-\uE010]+$/.test(digits)
        ? this.tokens[parseInt([...digits].map((c) => (c.charCodeAt(0) - DIGIT0).toString(16)).join(''), 16)]
        : undefined;
      if (token === undefined) {
        // Not an escape this class wrote (a template cut one short): the character stays as text.
        out += ESC;
        i = at + 1;
      } else {
        out += token;
        i = close + 1;
      }
    }
    return out + text.slice(i);
  }
}

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
