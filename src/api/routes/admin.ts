// The operator endpoints, under an operator key only (a key marked `"operator": true` in the keys
// file; with ASSAY_API_KEYS alone, the first key): what is resident, load and unload by hand, and
// the registry reload. Not part of the hosted API, hence /admin/ (docs/operations.md#model-residency).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AbortedError } from '../../engine/index.js';
import { InvalidRequestError } from '../../protocol/index.js';
import { acceptedModelNames, resolveModel, type Registry } from '../../registry/index.js';
import { admission } from '../admission.js';
import { OperatorOnlyError } from '../api-error.js';
import type { ApiContext } from '../context.js';

const ModelBody = z.strictObject({ model: z.string().min(1) });

/** The versioned id of a body's `model` with a folder of its own; 422 (pydantic's shape) otherwise. */
function modelOf(registry: Registry, body: unknown): string {
  const parsed = ModelBody.safeParse(body);
  const name = parsed.success ? parsed.data.model : undefined;
  const m = name === undefined ? undefined : resolveModel(registry, name);
  if (m && !m.entry.escalate) return m.id;
  const loadable = acceptedModelNames(registry).filter((n) => !resolveModel(registry, n)!.entry.escalate);
  throw new InvalidRequestError([
    {
      type: 'literal_error',
      loc: ['body', 'model'],
      msg: `Input should be a model with a folder of its own: ${loadable.map((n) => `'${n}'`).join(', ')}`,
      input: name ?? null,
      ctx: { expected: loadable.join(', ') },
    },
  ]);
}

export async function adminRoutes(app: FastifyInstance): Promise<void> {
  const ctx: ApiContext = app.assay;
  const operator = ctx.operator!;
  const key = admission(ctx);
  const onRequest = async (req: FastifyRequest, reply: Parameters<typeof key>[1]) => {
    await key(req, reply);
    if (!req.apiKey?.operator) throw new OperatorOnlyError('This endpoint needs an operator key');
  };

  app.get('/admin/models', { onRequest }, async () => operator.residency());

  app.post('/admin/models/load', { onRequest }, async (req) => {
    const id = modelOf(ctx.registry, req.body);
    // The request's deadline bounds the wait for room, as for an evaluation.
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new AbortedError(`deadline of ${ctx.deadlineMs} ms exceeded`)),
      ctx.deadlineMs,
    );
    try {
      await operator.load(id, controller.signal);
    } finally {
      clearTimeout(timer);
    }
    return { status: 'loaded', model: operator.view(id) ?? { model: id } };
  });

  app.post('/admin/models/unload', { onRequest }, async (req) => {
    const id = modelOf(ctx.registry, req.body);
    return { status: operator.unload(id) ? 'unloaded' : 'not_resident', model: id };
  });

  app.post('/admin/registry/reload', { onRequest }, async () => ({ status: 'reloaded', ...operator.reloadRegistry() }));
}
