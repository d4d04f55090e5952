// GET /v1/models: the names the calling key may send, with description and release date; the
// `x-assay-models-identity` header fingerprints what the names resolve to now (assay batch starts a
// new batch when it changes: the earlier batch's answers came from other models).
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { admission, keyAllows } from '../admission.js';
import { ModelMetadataListSchema } from '../../protocol/index.js';
import { listModels, type Registry } from '../../registry/index.js';

/** The header naming the models' identity: a hash of the registry's names, ids, folders and variants. */
export const MODELS_IDENTITY_HEADER = 'x-assay-models-identity';

const identities = new WeakMap<Registry, string>();

/** What every name resolves to (versioned id, folder, variant, family, options), hashed: changes with a reload that changes any. */
export function modelsIdentity(registry: Registry): string {
  let id = identities.get(registry);
  if (id === undefined) {
    const { default: def, aliases, models, file } = registry;
    const text = JSON.stringify({ file, def, aliases, models });
    id = createHash('sha256').update(text).digest('hex').slice(0, 16);
    identities.set(registry, id);
  }
  return id;
}

export async function modelsRoute(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  app.get('/v1/models', { onRequest: admission(ctx) }, async (req, reply) => {
    reply.header(MODELS_IDENTITY_HEADER, modelsIdentity(ctx.registry));
    const key = req.apiKey!;
    const models = listModels(ctx.registry, (name, id) => keyAllows(key, name, id)).map((m) => m.metadata);
    return ModelMetadataListSchema.parse({ models });
  });
}
