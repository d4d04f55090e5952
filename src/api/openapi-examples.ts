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

/** One `{"detail": "..."}` example per status, as the server words it (docs/api.md). */
export const ERROR_EXAMPLES: Record<string, string> = {
  '401': 'Invalid API key',
  '403': "This API key may not use model 'svc-latest'",
  '408': 'Request exceeded its deadline of 120000 ms',
  '413': 'Request body is larger than 8388608 bytes',
  '415': 'Unsupported media type: send the body as application/json',
  '429': 'Rate limit exceeded (requests per minute); retry after 29975 ms',
  '503': 'Model svc-1.13.0 failed to load (model folder does not exist); retrying in 4 s',
  '529': 'The engine is overloaded; retry with backoff',
};
