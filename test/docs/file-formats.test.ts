// docs/file-formats.md is the reference the schemas generate (npm run docs:formats): a field added,
// retyped or re-described in a schema fails this test until the page is regenerated.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fieldTable, FILE_FORMATS_PAGE, fileFormatsPage } from '../../src/config/file-formats.js';
import { KeysFileSchema } from '../../src/api/index.js';
import { ModelManifestSchema } from '../../src/engine/index.js';
import { RegistryFileSchema } from '../../src/registry/schema.js';

describe('docs/file-formats.md', () => {
  it('is the page the schemas generate (npm run docs:formats)', () => {
    expect(readFileSync(FILE_FORMATS_PAGE, 'utf8')).toBe(fileFormatsPage());
  });

  it('lists every field of the registry, assay.json and the keys file, with its type, whether required, and its description', () => {
    const registry = fieldTable(RegistryFileSchema);
    expect(registry).toContain(
      '| `models.<name>.release_date` | string matching `^\\d{4}-\\d{2}-\\d{2}$` | required | YYYY-MM-DD, shown in GET /v1/models. |',
    );
    expect(registry).toContain('| `aliases` | object (name → string) | default `{}` |');
    expect(registry).toContain('| `models.<name>.escalate.below.noul` | number ≥ 0, ≤ 1 or null | optional |');
    expect(fieldTable(ModelManifestSchema)).toContain('| `option_rotations` | integer ≥ 1 | optional |');
    expect(fieldTable(KeysFileSchema)).toContain('| `keys[].sha256` | string matching `^[0-9a-f]{64}$` | required |');
    // Every field has its description.
    for (const table of [registry, fieldTable(ModelManifestSchema), fieldTable(KeysFileSchema)])
      for (const row of table.split('\n').slice(2)) expect(row, row).not.toMatch(/\|\s*\|$/);
  });
});
