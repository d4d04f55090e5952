// The Assay client SDK: `import { AssayClient } from 'assay/client'`.
//
//   const client = new AssayClient();              // ASSAY_API_KEY, ASSAY_BASE_URL
//   const res = await client.evaluate({ state: 'The parcel arrived broken.', questions: {
//     damaged: { type: 'noul', instructions: 'Was the item damaged?' },
//   } });
//   res.answers.damaged;  res.usage;  res.requestId;
//
// Requests and answers are typed by the server's own zod schemas (src/protocol/schemas.ts); answers
// are checked against them on arrival.
export {
  AssayClient,
  DEFAULT_BASE_URL,
  DEFAULT_MODEL,
  type AssayClientOptions,
  type EvaluateOptions,
  type EvaluateRequest,
  type RequestOptions,
  type RetryInfo,
  type WithRequestId,
} from './client.js';
export {
  AssayBatches,
  BATCH_ENDED,
  type Batch,
  type BatchStatus,
  type CreateBatchOptions,
  type ResultsPage,
} from './batches.js';
export { AssayAbortError, AssayAPIError, AssayConnectionError, AssayError, AssayTimeoutError } from './errors.js';
export { backoffDelayMs, isRetryableStatus, serverRetryDelayMs } from './retry.js';
export * as schemas from '../protocol/index.js';
export type {
  Answer,
  ChoiceAnswer,
  ChoiceQuestion,
  Content,
  ModelMetadata,
  ModelMetadataList,
  NoulAnswer,
  NoulQuestion,
  Question,
  ScoreAnswer,
  ScoreQuestion,
  SystemOneRequest,
  SystemOneResponse,
  Usage,
  ValidationError,
} from '../protocol/index.js';
