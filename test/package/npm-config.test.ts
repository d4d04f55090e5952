// npm as a newcomer meets it in this checkout: no warning on every command (an `.npmrc` key npm
// does not know made npm 11 print `Unknown project config` each time), and the install stays
// offline: onnxruntime-node's install script (its only job: the CUDA download) is refused by
// package.json's allowScripts, which npm reads from 11.16 on (engines.npm says so).
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import semver from 'semver';
import { expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  engines: { npm?: string };
  allowScripts?: Record<string, boolean>;
};

it("an npm command in the checkout prints no warning about the project's config", () => {
  // As a person's shell runs it: none of the npm_config_* variables an outer npm (npm test) sets.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  const r = spawnSync('npm', ['pkg', 'get', 'name'], { encoding: 'utf8', env });
  expect(r.status).toBe(0);
  expect(r.stdout.trim()).toBe('"assay"');
  expect(r.stderr).not.toMatch(/Unknown project config/);
});

it("onnxruntime-node's install script is refused, by an npm that reads allowScripts", () => {
  expect(pkg.allowScripts?.['onnxruntime-node']).toBe(false);
  expect(semver.minVersion(pkg.engines.npm ?? '0.0.0')!.compare('11.16.0')).toBeGreaterThanOrEqual(0);
  // The npm running the suite is one the engines field admits (else the install above ran the script).
  const npm = execFileSync('npm', ['--version'], { encoding: 'utf8' }).trim();
  expect(semver.satisfies(npm, pkg.engines.npm!)).toBe(true);
});
