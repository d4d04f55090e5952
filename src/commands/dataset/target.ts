// What an arm of a dataset run is to the runner (a Target: one model to answer each line) and what
// opening one reads (TargetContext). Apart from targets.ts, which opens them, so the batch target
// (batch-target.ts) and the runner import these types without importing the openers.
import type { EngineConfig } from '../../engine/index.js';
import type { SystemOneResponse } from '../../protocol/index.js';
import type { Registry } from '../../registry/index.js';
import type { Io } from '../common.js';
import type { DatasetLine } from './read.js';

export interface Target {
  label: string;
  /** The versioned id that answered (a server: the response's model). */
  model: string;
  /** The model folder's assay.json marks it synthetic (random weights); a server: unknown (false). */
  synthetic: boolean;
  /** The model folder (local engine only): where `assay calibrate` writes. */
  dir?: string;
  /**
   * The formula of its choice and score confidence: the local engine's (the default, entropy); a
   * server: undefined, as its own --confidence decides and the API does not report it.
   */
  confidence?: NonNullable<EngineConfig['confidence']>;
  /** Runs every line at once before evaluate() is called (a server's batch: --batch). */
  prepare?(lines: DatasetLine[]): Promise<void>;
  evaluate(line: DatasetLine): Promise<SystemOneResponse>;
  close(): Promise<void>;
}

export interface TargetContext {
  io: Io;
  /** The local engine's registry (undefined with --url). */
  registry?: Registry;
  /** The model when the arm names none (--model, else the registry's default; a server: its default). */
  model?: string;
  url?: string;
  /** With --url: per-attempt timeout and retries of the client. */
  timeoutMs?: number;
  retries?: number;
  /** With --url: the lines go to the server as one batch (POST /v1/batches). */
  batch?: boolean;
  /** The command, for the prefix of the local engine's warnings (default eval). */
  command?: string;
}
