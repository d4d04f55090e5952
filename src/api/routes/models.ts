// GET /v1/models: the names the calling key may send, with description and release date.
import type { FastifyInstance } from 'fastify';
import { listModelNames, resolveModel } from '../../registry.js';
import { admission, keyAllows } from '../admission.js';
import { ModelMetadataListSchema, type ModelMetadataList } from '../../protocol/index.js';

export async function modelsRoute(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  app.get('/v1/models', { onRequest: admission(ctx) }, async (req) => {
    const key = req.apiKey!;
    const models: ModelMetadataList['models'] = [];
    for (const name of listModelNames(ctx.registry)) {
      const m = resolveModel(ctx.registry, name);
      if (!m || !keyAllows(key, name, m.id)) continue;
      models.push({ name, description: m.entry.description, release_date: m.entry.release_date });
    }
    return ModelMetadataListSchema.parse({ models });
  });
}
