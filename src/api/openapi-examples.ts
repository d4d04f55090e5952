// The OpenAPI document's examples: the README's request and real answers of each type, so every
// tool that reads /openapi.json (Swagger UI's "Try it out", client generators) starts from a body
// that works. test/docs/openapi-examples.test.ts holds them to the schemas and to the README.

/** The README's example request: one question of each type. */
export const REQUEST_EXAMPLE = {
  state: 'Order #1042 arrived two days late and the box was damaged. The customer asks for a refund.',
  model: 'svc-latest',
  questions: {
    refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
    topic: {
      type: 'choice',
      instructions: 'What is the main topic?',
      criteria: { delivery: 'shipping, delays, damage', billing: null, product: 'the item itself' },
    },
    severity: {
      type: 'score',
      instructions: 'How severe is the complaint?',
      criteria: ['no issue', 'minor', 'serious'],
    },
  },
};

/** The README's answer to it (the synthetic tiny model: the numbers mean nothing, the shapes are the contract). */
export const RESPONSE_EXAMPLE = {
  model: 'svc-1.13.0',
  answers: {
    refund: { type: 'noul', noul: 0.11493104691737191 },
    topic: {
      type: 'choice',
      choice: 'delivery',
      probabilities: { delivery: 0.8404183364926996, billing: 0.006997497206813653, product: 0.15258416630048668 },
      confidence: 0.5742824656762999,
    },
    severity: {
      type: 'score',
      score: 0.7681340041031676,
      legend: { '0': 'no issue', '1': 'minor', '2': 'serious' },
      probabilities: { '0': 0.2468674109147542, '1': 0.7381311740673242, '2': 0.015001415017921677 },
      confidence: 0.42430518016351293,
    },
  },
  usage: { input_tokens: 184, output_tokens: 8 },
};

export const MODELS_EXAMPLE = {
  models: [
    {
      name: 'svc-latest',
      description:
        'Synthetic tiny decoder with random weights: exercises the API end to end; its answers are meaningless until a real model is registered',
      release_date: '2026-11-22',
    },
    {
      name: 'svc-preview',
      description:
        'Synthetic tiny decoder with random weights: exercises the API end to end; its answers are meaningless until a real model is registered',
      release_date: '2026-11-22',
    },
  ],
};

export const VALIDATION_EXAMPLE = {
  detail: [
    { type: 'missing', loc: ['body', 'state'], msg: 'Field required', input: { model: 'svc-latest', questions: {} } },
  ],
};

/**
 * The message of each error whose `detail` is its own message, as the server words it (docs/api.md);
 * the table words the others itself (src/api/openapi/errors.ts asks it).
 */
export const ERROR_EXAMPLES: Record<string, string> = {
  unauthenticated: 'Invalid API key',
  host_forbidden: 'Host "attacker.example" is not allowed: name it in --allowed-hosts',
  origin_forbidden: 'Origin "https://x.example" is not allowed: list it in --cors-origins',
  rate_limited: 'Rate limit exceeded (requests per minute); retry after 29975 ms',
  draining: 'The server is shutting down',
  body_worker_unavailable: 'The body worker is restarting; retry shortly',
  model_forbidden: "This API key may not use model 'svc-latest'",
  token_budget_exceeded: 'The request has 70000 tokens, more than the model takes (32768)',
  untokenizable_input: 'The input holds text the tokenizer cannot encode',
  model_unavailable: 'Model svc-1.13.0 failed to load (model folder does not exist); retrying in 4 s',
  models_busy:
    'Model m-d cannot be loaded now: 3 of 3 models are resident (--max-loaded-models) and each has requests in flight; retry later',
  model_too_large:
    'Model m-b needs 900.0 MiB (measured at its load), more than the whole memory budget of 512.0 MiB (--memory-budget)',
  models_pinned:
    'Model m-c cannot be loaded: the models kept by --preload (m-a) take every place of --max-loaded-models',
  operator_only: 'This endpoint needs an operator key',
  model_in_use:
    'Model m-b has 1 request(s) in flight or queued; it is not unloaded under them (retry once they finish)',
  registry_refused: 'Registry not reloaded (the models stay as they were): models["svc-a"].path: expected string',
  model_load_failed: 'model folder does not exist',
  batch_not_found: "No batch found with id 'batch_0123'",
  invalid_cursor: 'The cursor does not belong to this batch',
  idempotency_conflict: 'This Idempotency-Key was used for batch batch_0123 with other content',
  batch_too_large: 'A batch input is at most 209715200 bytes',
  batches_unavailable: 'Batches are not available on this server: batches are turned off',
};
