// The label tables of a label-tokens contract (docs/families/label-tokens.md, "Label tables"), built
// from the folder's tokenizer at load: `letters` (A..Z, then the single-token AA..ZZ, at most 255:
// the decider's table, decider/labels.ts), `digits` (0..9) or the contract's list, every label one
// token when encoded as text (no special tokens), else the folder does not load.
import { ModelLoadError } from '../../errors.js';
import { computeLabelTable, type LabelTable } from '../decider/labels.js';
import type { QuestionType, TableSpec } from './contract.js';

const DIGITS = Array.from({ length: 10 }, (_, i) => String(i));

/** The table of a list of strings, each one token; `field` names the list in errors. */
function listed(strings: readonly string[], encode: (text: string) => number[], field: string): LabelTable {
  const ids = strings.map((s, i) => {
    const t = encode(s);
    if (t.length !== 1)
      throw new ModelLoadError(
        `${field}[${i}]: the tokenizer writes ${JSON.stringify(s)} as ${t.length} tokens, not one`,
      );
    return t[0]!;
  });
  if (new Set(ids).size !== ids.length) throw new ModelLoadError(`${field}: two labels are the same token`);
  return { strings: [...strings], ids };
}

/** One type's table; `encode` writes a text as data. */
export function labelTable(spec: TableSpec, encode: (text: string) => number[], field: string): LabelTable {
  if (spec === 'digits') return listed(DIGITS, encode, field);
  if (spec === 'letters') {
    try {
      return computeLabelTable(encode);
    } catch (error) {
      throw new ModelLoadError(`${field}: ${(error as Error).message}`);
    }
  }
  return listed(spec, encode, field);
}

/** Every type's table. */
export function labelTables(
  specs: Record<QuestionType, TableSpec>,
  encode: (text: string) => number[],
  where: string,
): Record<QuestionType, LabelTable> {
  return {
    choice: labelTable(specs.choice, encode, `${where}: contract.labels.choice`),
    noul: labelTable(specs.noul, encode, `${where}: contract.labels.noul`),
    score: labelTable(specs.score, encode, `${where}: contract.labels.score`),
  };
}
