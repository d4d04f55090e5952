// assay mcp [--url URL] [--model M] [--registry FILE] [--thresholds FILE#ACT[,REVIEW]]
//
// An MCP server on stdio for desktop agents: the tools of src/mcp over the engine in this process
// (the registry's models, loaded on first use; the default one at start) or over a running server
// (--url, key from ASSAY_API_KEY). stdout carries the protocol alone: every word of ours goes to
// stderr.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { errorResponse } from '../api/index.js';
import { AssayClient, AssayError } from '../client/index.js';
import { packageVersion } from '../common/index.js';
import { commandFlags, COMMON_FLAGS } from '../config/index.js';
import { DEFAULTS } from '../defaults.js';
import { createMcpServer, ToolFailure, type DecisionThresholds, type McpBackend } from '../mcp/index.js';
import { listModels, loadRegistry, resolveModel } from '../registry/index.js';
import { ParsedBody } from '../protocol/index.js';
import { evaluateRequest } from '../service/index.js';
import { NO_KEY, parseCommand, resolveIo, serverTarget, type CommandIo, type Io } from './common.js';
import { thresholdsFromReport } from './dataset/escalation-sweep.js';
import { DatasetError } from './dataset/read.js';
import { openLocalModel } from './local-model.js';

const FLAGS = commandFlags({
  head: `Usage: assay mcp [--url URL [--key KEY]] [--model M] [--registry FILE] [--thresholds FILE#ACT[,REVIEW]]

An MCP server on stdio (Model Context Protocol) for desktop agents, with the tools
models, check (yes/no), classify (one option), score (a rubric level) and evaluate
(a whole request). Configure it in the agent as the command \`assay mcp\`.
`,
  flags: {
    url: COMMON_FLAGS.url('answer through a running server instead of a local engine', 'the local engine'),
    key: COMMON_FLAGS.key(),
    model: COMMON_FLAGS.model("the tools' default model (default: the registry's default; with --url, svc-latest)"),
    registry: COMMON_FLAGS.registry('local engine: model registry'),
    thresholds: {
      arg: 'FILE#ACT[,REVIEW]',
      doc: `decision thresholds from a coverage report (report.json of
assay eval --dataset --out): the budget ACT's thresholds say act,
REVIEW's (optional, a looser budget) review, below them abstain,
e.g. report.json#0.02,0.1; for every model (the registry's
"decision_thresholds" apply otherwise)`,
    },
  },
  column: 34,
  tail: `It runs until the agent closes stdin. Exit status: 0 closed, 1 failed, 2 bad arguments.`,
});

/** `FILE#ACT[,REVIEW]`: the report's thresholds at those budgets, as act and review thresholds. */
export function reportDecision(spec: string): DecisionThresholds {
  const [file, budgets] = spec.split('#') as [string, string | undefined];
  const [act, review] = (budgets ?? '').split(',');
  if (!act) throw new DatasetError(`--thresholds ${spec}: name the budget, e.g. ${file}#0.02 or ${file}#0.02,0.1`);
  const at = (budget: string) => {
    const below = thresholdsFromReport(`${file}#${budget}`)[0]!.below;
    // null: no threshold keeps the budget for that type; that type gets no such decision.
    return Object.fromEntries(Object.entries(below).filter(([, v]) => typeof v === 'number')) as Record<string, number>;
  };
  return { act: at(act), ...(review ? { review: at(review) } : {}) };
}

/** The tools over a server: its models and answers as this key sees them, its errors as it sends them. */
function remoteBackend(
  url: string,
  key: string,
  model: string | undefined,
  io: Io,
  decision?: DecisionThresholds,
): McpBackend {
  const client = new AssayClient({ baseUrl: url, apiKey: key, model });
  const call = async <T>(f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (e) {
      if (e instanceof AssayError) throw new ToolFailure(e.status ?? 502, e.detail ?? e.message);
      throw e;
    }
  };
  return {
    defaultModel: client.model,
    models: () => call(async () => (await client.listModels()).models),
    evaluate: (request, signal) =>
      call(() =>
        request instanceof ParsedBody
          ? client.evaluate(request.value as never, { signal, order: request.order })
          : client.evaluate(request as never, { signal }),
      ),
    thresholds: () => decision,
  };
}

/** The tools over the engine in this process: the registry's models, loaded on first use. */
async function localBackend(
  registryFile: string,
  model: string | undefined,
  io: Io,
  decision?: DecisionThresholds,
): Promise<McpBackend & { close(): Promise<void> }> {
  const registry = loadRegistry(registryFile);
  const name = model ?? registry.default;
  const resolved = resolveModel(registry, name);
  if (!resolved) throw new DatasetError(`--model ${name}: not in the registry ${registryFile}`);
  // The default model loads now, in the background: the agent's handshake does not wait for it.
  const pool = openLocalModel(registry, resolved, io, {}, 'mcp');
  pool.catch((e: Error) => io.err(`assay mcp: ${e.message}\n`));
  const context = { deadlineMs: DEFAULTS.deadlineMs, bodyLimit: DEFAULTS.bodyLimit };
  return {
    defaultModel: name,
    models: async () => listModels(registry).map((m) => m.metadata),
    async evaluate(request, signal) {
      try {
        return (await evaluateRequest({ registry, models: await pool }, request, { signal })).response;
      } catch (e) {
        const r = errorResponse(e as Error, context);
        if (r.status >= 500) io.err(`assay mcp: ${(e as Error).message}\n`);
        throw new ToolFailure(r.status, r.body.detail, r.headers ?? {});
      }
    },
    thresholds: (id) => decision ?? registry.models[id]?.decision_thresholds,
    close: async () => (await pool.catch(() => undefined))?.close(),
  };
}

export async function run(argv: string[], ioOptions?: CommandIo): Promise<number> {
  const io = resolveIo(ioOptions);
  const parsed = parseCommand('mcp', FLAGS, argv, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const { url, key } = serverTarget(values, io.env);
  if (url && !key) {
    io.err(`assay mcp: ${NO_KEY}\n`);
    return 2;
  }
  let backend: McpBackend & { close?(): Promise<void> };
  try {
    const decision = values.thresholds ? reportDecision(values.thresholds) : undefined;
    backend = url
      ? remoteBackend(url, key!, values.model, io, decision)
      : await localBackend(parsed.registry, values.model, io, decision);
  } catch (e) {
    io.err(`assay mcp: ${(e as Error).message}\n`);
    return e instanceof DatasetError || e instanceof AssayError ? 2 : 1;
  }
  const server = createMcpServer(backend, packageVersion());
  const transport = new StdioServerTransport(ioOptions?.stdin as never, ioOptions?.stdout as never);
  const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
  await server.connect(transport);
  // The agent ends the session by closing stdin.
  (ioOptions?.stdin ?? process.stdin).once('end', () => void server.close());
  await closed;
  await backend.close?.();
  return 0;
}
