// A label-tokens folder's contract name (decision.json `contract.name`, default `label-tokens`), for
// listings (`assay models`): read without checking the contract, which the load does.
import { join } from 'node:path';
import { readJsonFile } from '../files.js';
import { DECISION_FILE } from '../files.js';

export const DEFAULT_CONTRACT_NAME = 'label-tokens';

/** The contract's name, or undefined where decision.json cannot be read. */
export function contractName(dir: string): string | undefined {
  try {
    const contract = readJsonFile(join(dir, DECISION_FILE))?.contract as { name?: unknown } | undefined;
    return typeof contract?.name === 'string' && contract.name !== '' ? contract.name : DEFAULT_CONTRACT_NAME;
  } catch {
    return undefined;
  }
}
