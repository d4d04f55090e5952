// The models a caller may list: GET /v1/models, the playground's list and `assay models` read the
// same names, in the same order, with the same metadata. Beside the registry rather than in the
// service: listing models must not load the engine (and onnxruntime) that the service imports.
import type { ModelMetadata } from '../protocol/index.js';
import { listModelNames, resolveModel, type Registry, type ResolvedModel } from './registry.js';

export interface ListedModel {
  /** What GET /v1/models says of the name. */
  metadata: ModelMetadata;
  /** The entry the name resolves to. */
  resolved: ResolvedModel;
}

/** The registry's listed names (aliases first) that resolve and that `allows` (a key's permission) admits. */
export function listModels(
  registry: Registry,
  allows: (name: string, id: string) => boolean = () => true,
): ListedModel[] {
  const models: ListedModel[] = [];
  for (const name of listModelNames(registry)) {
    const resolved = resolveModel(registry, name);
    if (!resolved || !allows(name, resolved.id)) continue;
    const { description, release_date } = resolved.entry;
    models.push({ metadata: { name, description, release_date }, resolved });
  }
  return models;
}
