// A model family, described once, in its own folder: its name and the layout ids a folder may
// declare it by, which engine runs it and what that engine reuses, how a folder's files show it and
// what a hub fetch brings, the decision.json fields it reads, its loader (a row family's parts, or a
// decoder-engine family's prompt contract) and its refusals. The one list of them (list.ts) is
// where every other list comes from: the names, detection, loading, the planner's contracts, the
// hub fetcher's selection, /metrics' prefix_reuse, `assay models`, the file-formats page.
import type { z } from 'zod';
import type { BudgetError } from '../errors.js';
import type { Budgets, Plan, ReadQuestion } from '../prompting/plan.js';
import type { TextCodec } from '../prompting/tokenizer.js';
import type { EvaluateRequest } from '../types.js';
import type { FolderFiles, HasFile } from './files.js';
import type { FamilyPlan, RowFamilySpec, RowReader } from './rows/family.js';

/**
 * Which engine runs a family: the decoder engine (prompting/, execution/: a state's KV encoded once
 * and reused across questions and requests), the causal-row runner (causal/: a causal trunk's
 * whole rows with a gathered-position head), or an encoder's whole rows (rows/batched.ts).
 */
export type FamilyEngine = 'decoder-engine' | 'causal-rows' | 'encoder-rows';

/** How a folder's files show a family, besides decision.json's `layout`. */
export interface DetectRule {
  /** The file that shows the family, or undefined; `folder.json` reads a file only when asked. */
  by(folder: FolderFiles): string | undefined;
  /** Tried after every other family's rule (the decoder: any config.json). */
  last?: boolean;
  /** What a folder of the family needs, in the refusal of a folder that matches none. */
  needs: string;
  /** What else the folder needs once its files showed the family (undefined: nothing), as a load error's text. */
  lacks?(dir: string, has: HasFile): string | undefined;
}

/** What a hub fetch brings of a row family's repo, besides its graph and tokenizer files. */
export interface FetchRule {
  /** The settings file the repo must have. */
  settings: string;
  /** Files brought when the repo has them. */
  optional: readonly string[];
  /** Whether a split encoder.onnx + head.onnx is one of the family's graphs. */
  split: boolean;
  /** What `--split` is refused with for a family of one graph: 'an NLI cross-encoder is one graph'. */
  oneGraph: string;
  /** Its paragraph in `assay models fetch --help` (none: decision.json's layout is how its repo is known). */
  help?: string;
}

/** A decoder-engine family's prompt contract, read from its folder on the thread that loads the model. */
export interface ContractRead<S> {
  /** What the planner threads need (plain data: it crosses to them). */
  settings: S;
  /** What the load reports of the folder. */
  notes: string[];
  /** Each answer's log-probabilities from its rows' label log-probabilities. */
  read(asked: readonly ReadQuestion[], logps: ReadonlyArray<readonly number[]>): number[][];
}

/** A decoder-engine family whose folder carries its own prompt contract (not Assay's chat prompt). */
export interface ContractSpec<S = unknown> {
  /** How the load note describes the contract: 'its own prompt contract'. */
  what: string;
  read(dir: string, codec: TextCodec): ContractRead<S>;
  /** Plans a request under the contract (in a planner thread). */
  plan(request: EvaluateRequest, codec: TextCodec, settings: S, budgets: Budgets): Plan;
}

/** A refusal a family's layout throws: a BudgetError of its own (422), crossing threads as a BudgetError. */
export type Refusal = abstract new (...args: never[]) => BudgetError;

export interface FamilyDescriptor<N extends string = string> {
  /** The name the registry's `family`, decision.json's `layout` (`<name>-v<N>`), the docs and /metrics use. */
  readonly name: N;
  /** Other layout ids decision.json may declare it by (without `-v<N>`), as other servers write them. */
  readonly layoutIds?: readonly string[];
  readonly engine: FamilyEngine;
  /**
   * What its engine reuses across a request's questions (and requests): a state's prefix KV, a
   * causal-row trunk's state snapshot (where the load-time rewrite reads its graph: /metrics'
   * prefix_reuse says per loaded model), or nothing.
   */
  readonly reuses: 'prefix' | 'state snapshot' | 'nothing';
  /** How a folder's files show it, when they can (else only decision.json's layout or the registry). */
  readonly detect?: DetectRule;
  /** A row family's hub fetch (a decoder-engine family's repo is fetched as a decoder's). */
  readonly fetch?: FetchRule;
  /** The decision.json fields it reads (docs/file-formats.md is generated from them). */
  readonly decision?: z.ZodType;
  /** A row family: its folder and its graph (imported when a model loads: they bring onnxruntime). */
  readonly rows?: () => Promise<RowFamilySpec<FamilyPlan, RowReader, unknown>>;
  /** A decoder-engine family with a prompt contract of its own. */
  readonly contract?: ContractSpec;
  /** What its layout refuses a request with. */
  readonly refusals: readonly Refusal[];
  /** What `assay models` shows after its name for a folder (a prompt contract's own name). */
  describe?(dir: string): string | undefined;
}

/** A descriptor with its name as a literal type (list.ts derives the names from them). */
export function defineFamily<const N extends string>(d: FamilyDescriptor<N>): FamilyDescriptor<N> {
  return d;
}

/** A row family's parts as a descriptor holds them: imported on first use, their plan and reader types erased. */
export function rowParts<P extends FamilyPlan, F extends RowReader<P>, W>(
  load: () => Promise<RowFamilySpec<P, F, W>>,
): () => Promise<RowFamilySpec<FamilyPlan, RowReader, unknown>> {
  return load as unknown as () => Promise<RowFamilySpec<FamilyPlan, RowReader, unknown>>;
}

/** A contract as a descriptor holds it (its settings type erased). */
export function contractParts<S>(spec: ContractSpec<S>): ContractSpec {
  return spec as unknown as ContractSpec;
}
