// Every default of the server and the engine, in one place. A leaf module: every layer may read it.
// The settings schema (src/config/settings.ts) documents each one and the README's configuration
// table is generated from that schema.

export const DEFAULTS = {
  // HTTP
  host: '127.0.0.1',
  port: 8080,
  /** Largest request body, bytes (413 above). */
  bodyLimit: 8 * 1024 * 1024,
  /**
   * Bodies up to this size are parsed on the event loop; larger ones in the body worker (measured:
   * below it a worker round trip costs more than the parse it saves).
   */
  inlineBodyBytes: 64 * 1024,
  /**
   * Larger bodies on their way to the body worker at once (read and checked); the others wait
   * unread, their clients held back by TCP: memory stays within about this many × bodyLimit.
   */
  bigBodySlots: 4,
  /** Per-request deadline: model load wait + queue + evaluation (408 past it). */
  deadlineMs: 120_000,
  /** Time a client gets to send its whole request (slowloris guard). */
  requestTimeoutMs: 60_000,
  /**
   * Time a client gets to send its request's headers (a few milliseconds for any real client): a
   * connection that trickles them is closed with a 408 well before --request-timeout-ms.
   */
  headersTimeoutMs: 10_000,
  /**
   * How long an idle keep-alive connection stays open for its next request: Fastify's 72 s, longer
   * than the 60 s idle timeout of common load balancers (a proxy must close first, or it may send
   * a request on a connection the server is closing).
   */
  keepAliveTimeoutMs: 72_000,
  /**
   * How long a response may make no progress to its client (nginx's send_timeout): a client that
   * stops reading, or reads a byte a second, is cut then. A request still being evaluated is not
   * a stall: the deadline bounds it.
   */
  sendTimeoutMs: 60_000,
  // Batch jobs (docs/batches.md)
  batches: true,
  /** OpenAI's limits of one batch input. */
  batchMaxLines: 50_000,
  batchMaxBytes: 200 * 1024 * 1024,
  /** How long a batch has to finish (OpenAI's completion window). */
  batchWindow: '24h',
  /** Results of an ended batch never read to the end are deleted this long after it ended. */
  batchRetention: '24h',
  /** Results read to the last page are deleted this long after. */
  batchReadRetention: '1h',
  /** How long a claim of batch lines is held before another runner may take them up. */
  batchLease: '2m',
  /**
   * The batch store's reconnect policy (PostgreSQL away, a full disk): a runner whose store call
   * failed so waits firstMs, doubling up to maxMs, then tries again, for as long as it takes (its
   * answered lines kept in memory meanwhile, written once it is back); a connection attempt that
   * gets no answer is given up after connectMs.
   */
  batchStoreRetry: { firstMs: 500, maxMs: 5_000, connectMs: 10_000 },
  // Per-key rate limits (docs/operations.md)
  requestsPerMinute: 1200,
  inputTokensPerSecond: 250_000,
  // Engine
  provider: 'cpu',
  /** onnxruntime intra-op threads; 0 = one per core. */
  threads: 0,
  graphOptimization: 'all',
  /** Exact int8 where the CPU's fast int8 kernel saturates (AVX2, AVX-512 without VNNI); see engine/model/cpu.ts. */
  exactInt8: true,
  /** 4-bit exports through the int8 kernels (converted at load; engine/model/q4-to-int8.ts), or 'native'. */
  q4Kernels: 'int8',
  /** Dynamic int8 products quantize each token's activations on their own (engine/model/per-token-int8.ts). */
  perTokenInt8: true,
  prefixCacheBytes: 256 * 1024 * 1024,
  maxQueue: 64,
  prefillChunk: 256,
  requestTokenBudget: 64_000,
  questionTokenBudget: 32_000,
  prefixCacheScope: 'key',
  /** Most question tokens in one packed pass. */
  packTokens: 512,
  /**
   * Most question tokens in one packed pass of the batch lane: an interactive request waits behind
   * at most one batch pass, so a batch pass is kept short (engine/execution/evaluator.ts).
   */
  batchPackTokens: 128,
  /**
   * Encoder families: most padded tokens of one batch of a request's rows (engine/families/evaluator.ts),
   * by provider. Off on CPU: a row of 128+ tokens already fills the GEMM, and a batch pays for its
   * padding (measured on ModernBERT-large fp32, 2 threads: 5 rows batched took 1.25×-1.45× one by one).
   */
  rowBatchTokens: { cpu: 0, cuda: 4096 },
  /**
   * Most tokens of one pass shared by concurrent requests (0: off), by provider. Off on CPU: the
   * plain-op attention computes every masked score, so a shared pass costs more than its parts
   * (measured: 8 requests of 213 tokens, 2 by 2 took 1.25× the time of one by one).
   */
  batchTokens: { cpu: 0, cuda: 4096 },
  /** The confidence of choice and score answers: 1 − H/ln N ('entropy'), or the hosted service's formulas ('hosted'); docs/api.md. */
  confidence: 'entropy',
  /** Evaluate a request's questions in one pass on its prefix (engine/execution/strategies.ts). */
  packQuestions: true,
  /** The load-time graph rewrite (engine/model/graph-rewrite.ts). */
  rewriteGraph: true,
  fusedAttention: true,
  // Residency (src/service/residency.ts; docs/operations.md#model-residency)
  /** Most models resident at once (Ollama's OLLAMA_MAX_LOADED_MODELS on CPU). */
  maxLoadedModels: 3,
  /** Idle time before a model is unloaded (Ollama's OLLAMA_KEEP_ALIVE): 0 after each request, negative never. */
  keepAlive: '5m',
  /** With no --memory-budget: this share of the machine's memory (its cgroup limit when lower) for resident models. */
  memoryBudgetShare: 0.5,
  // Server extras
  /** engine;dur= in Server-Timing: off, because it tells a prefix-cache hit from a miss. */
  serverTimingEngine: false,
  /** /docs (Swagger UI) and /playground. */
  docs: true,
  playground: true,
  /** /mcp, the MCP endpoint for agents (docs/agents.md). */
  mcp: true,
  // Logs
  logLevel: 'info',
} as const;
