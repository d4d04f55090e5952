// What the label-tokens tests share: each contract's goldens (written by an independent Python
// reference of docs/families/label-tokens.md, never from Assay's layout code), a golden request as
// the engine takes it, and the budgets the replica's folder gives the planner.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULTS } from '../../src/defaults.js';
import { readLabelTokensFolder, type LabelTokensFolder } from '../../src/engine/families/label-tokens/index.js';
import type { Budgets } from '../../src/engine/prompting/plan.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import type { EvaluateRequest, Question } from '../../src/engine/types.js';
import {
  CONTRACTS_DIR,
  ensureLabelTokensReplica,
  type LabelTokensContract,
} from '../../tools/families/label-tokens/replica.js';
import { readGoldens } from './golden-helpers.js';

export interface LabelTokensRequest {
  name: string;
  state: unknown;
  questions: Array<[string, Record<string, unknown> & { type: Question['type'] }]>;
}

export interface LabelTokensResult {
  name: string;
  refused?: 'type' | 'options' | 'levels' | 'context';
  prefix?: number[];
  cut?: boolean;
  rows?: Array<{ key: string; piece: number[]; labels: number[] }>;
  probabilities?: Record<string, number[]>;
}

export interface LabelTokensGoldens {
  contract: LabelTokensContract;
  temperature: [number, number, number];
  requests: LabelTokensRequest[];
  results: LabelTokensResult[];
}

/** A contract's goldens file. */
export function goldensFile(contract: LabelTokensContract): string {
  return join(CONTRACTS_DIR, '..', `${contract}.goldens.json`);
}

/** A contract's goldens (undefined before the reference has written them). */
export function goldensOf(contract: LabelTokensContract): LabelTokensGoldens | undefined {
  const file = goldensFile(contract);
  return existsSync(file) ? readGoldens<LabelTokensGoldens>(file) : undefined;
}

/**
 * A golden request as the engine takes it: ids and options in the order sent (a choice's criteria
 * as the goldens write them, an object: none of its names is integer-like, so its key order is the file's).
 */
export function labelTokensRequest(g: LabelTokensRequest): EvaluateRequest {
  const questions = Object.create(null) as Record<string, Question>;
  const order = g.questions.map(([id, q]) => {
    const c = q.criteria as Record<string, unknown> | Array<[string, unknown]>;
    const pairs = q.type !== 'choice' ? undefined : Array.isArray(c) ? c : Object.entries(c);
    if (pairs?.some(([n]) => /^(0|[1-9]\d*)$/.test(n))) throw new Error(`${g.name}: an integer-like option name`);
    questions[id] = (pairs ? { ...q, criteria: Object.fromEntries(pairs) } : q) as unknown as Question;
    return pairs ? { id, options: pairs.map(([n]) => n) } : { id };
  });
  return { state: g.state, questions, order } as EvaluateRequest;
}

/** The engine's default budgets with the replica's context (config.json max_position_embeddings). */
export const REPLICA_BUDGETS: Budgets = {
  request: DEFAULTS.requestTokenBudget,
  question: DEFAULTS.questionTokenBudget,
  context: 32_768,
};

/** A contract's replica folder, its codec and what the family reads of it. */
export async function loadContract(
  contract: LabelTokensContract,
): Promise<LabelTokensFolder & { dir: string; codec: TextCodec }> {
  const dir = await ensureLabelTokensReplica(contract);
  const codec = await TextCodec.load(dir);
  return { dir, codec, ...readLabelTokensFolder(dir, codec) };
}
