// What the playground sends and gets: the API's wire types (imported as types from
// src/protocol, a referenced project of the browser build), the two calls, and the state hash the client SDK
// sends for state-affine routing (docs/scale-out.md).

import type { Answer, Content, Question, SystemOneRequest, SystemOneResponse } from '../../protocol/index.js';

export type { Answer, Content, Question };
export type EvaluateRequest = SystemOneRequest;
export type EvaluateResponse = SystemOneResponse;
export interface ValidationError {
  type: string;
  loc: Array<string | number>;
  msg: string;
}
export interface PlaygroundModel {
  name: string;
  description: string;
  release_date: string;
  synthetic: boolean;
  /** Trained on one task only (its answers are right there and meaningless elsewhere). */
  task_only: boolean;
  /** Resident in the server now: its first request does not wait for a load. */
  warm: boolean;
  /** The formula of its choice and score confidence (the server's --confidence). */
  confidence: 'entropy' | 'hosted';
}

/** A held-out line of a trained model's task: a request to send, and the answers it should get. */
export interface TaskExample {
  model: string;
  state: Content;
  questions: Record<string, Question>;
  expected: Record<string, boolean | string | number>;
}

/** An HTTP answer that is not a 2xx: the status, the body's detail, the retry hints. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly detail: string | ValidationError[],
    readonly retryAfterSeconds: number | undefined,
    readonly requestId: string | undefined,
  ) {
    super(typeof detail === 'string' ? detail : `${detail.length} validation error(s)`);
  }
}

/** The hex sha256 of the state's JSON, as the client SDK sends it; undefined where WebCrypto is absent (plain http off localhost). */
export async function stateHash(state: Content): Promise<string | undefined> {
  if (!globalThis.crypto?.subtle) return undefined;
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(JSON.stringify(state)));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

async function failure(res: Response): Promise<ApiFailure> {
  const body = (await res.json().catch(() => ({}))) as { detail?: string | ValidationError[] };
  const retry = res.headers.get('retry-after');
  return new ApiFailure(
    res.status,
    body.detail ?? res.statusText,
    retry === null ? undefined : Number(retry),
    res.headers.get('x-request-id') ?? undefined,
  );
}

export async function listModels(key: string): Promise<PlaygroundModel[]> {
  const res = await fetch('/playground/models', { headers: { authorization: `Bearer ${key}` } });
  if (!res.ok) throw await failure(res);
  return ((await res.json()) as { models: PlaygroundModel[] }).models;
}

/** The held-out examples the server ships (no key needed: they are the repository's own data). */
export async function listExamples(): Promise<TaskExample[]> {
  const res = await fetch('/playground/examples');
  if (!res.ok) throw await failure(res);
  return ((await res.json()) as { examples: TaskExample[] }).examples;
}

export interface Evaluation {
  response: EvaluateResponse;
  ms: number;
  requestId: string | undefined;
}

export async function evaluate(key: string, request: EvaluateRequest): Promise<Evaluation> {
  const hash = await stateHash(request.state);
  const started = performance.now();
  const res = await fetch('/v1/systemone', {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(hash ? { 'x-assay-state-hash': hash } : {}),
    },
    body: JSON.stringify(request),
  });
  if (!res.ok) throw await failure(res);
  const response = (await res.json()) as EvaluateResponse;
  return { response, ms: performance.now() - started, requestId: res.headers.get('x-request-id') ?? undefined };
}
