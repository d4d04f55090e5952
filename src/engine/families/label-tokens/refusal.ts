// A refusal of a label-tokens contract (422): what its model cannot be asked, and the limit.
import { BudgetError } from '../../errors.js';

/** Which limit: a question type the contract lacks, more options or levels than its tables label. */
export type RefusalLimit = 'type' | 'options' | 'levels';

export class LabelTokensRefusal extends BudgetError {
  constructor(
    readonly refused: RefusalLimit,
    count: number,
    limit: number,
    message: string,
  ) {
    super('context', count, limit, false, message);
    this.name = 'LabelTokensRefusal';
  }
}
