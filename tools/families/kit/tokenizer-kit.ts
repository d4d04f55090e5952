// What the families' stand-in tokenizers share (tests only): the two files of a tokenizer as
// objects, an added-token entry of tokenizer.json, the BERT-style post-processor (`[CLS] $A [SEP]`,
// pairs `[CLS] $A [SEP] $B [SEP]`), and the writing of tokenizer.json and tokenizer_config.json.
// Used by laya-tokenizer.ts and nli-tokenizers.ts.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** tokenizer.json and tokenizer_config.json, as objects. */
export interface TestTokenizer {
  tokenizer: Record<string, unknown>;
  config: Record<string, unknown>;
}

/** An entry of tokenizer.json's `added_tokens`. */
export function addedToken(id: number, content: string, special: boolean, lstrip = false): Record<string, unknown> {
  return { id, content, single_word: false, lstrip, rstrip: false, normalized: false, special };
}

/**
 * The post-processor of a BERT-style tokenizer: `[CLS] $A [SEP]`, and pairs `[CLS] $A [SEP] $B [SEP]`
 * whose second segment and last [SEP] have type `pairType` (0 for ModernBERT's, 1 for DeBERTa's).
 */
export function bertTemplate(clsId: number, sepId: number, pairType: 0 | 1): Record<string, unknown> {
  const cls = { SpecialToken: { id: '[CLS]', type_id: 0 } };
  const sep = (type_id: number) => ({ SpecialToken: { id: '[SEP]', type_id } });
  return {
    type: 'TemplateProcessing',
    single: [cls, { Sequence: { id: 'A', type_id: 0 } }, sep(0)],
    pair: [
      cls,
      { Sequence: { id: 'A', type_id: 0 } },
      sep(0),
      { Sequence: { id: 'B', type_id: pairType } },
      sep(pairType),
    ],
    special_tokens: {
      '[CLS]': { id: '[CLS]', ids: [clsId], tokens: ['[CLS]'] },
      '[SEP]': { id: '[SEP]', ids: [sepId], tokens: ['[SEP]'] },
    },
  };
}

/** Writes tokenizer.json (one line) and tokenizer_config.json (indented) into `dir`. */
export function writeTestTokenizer(dir: string, { tokenizer, config }: TestTokenizer): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), `${JSON.stringify(config, null, 2)}\n`);
}

/** The command line of a tokenizer script: `npx tsx SCRIPT DIR` writes into DIR. */
export function tokenizerMain(script: string, write: (dir: string) => string): void {
  const dir = process.argv[2];
  if (!dir) {
    console.error(`usage: npx tsx ${script} DIR`);
    process.exit(2);
  }
  console.log(write(dir));
}
