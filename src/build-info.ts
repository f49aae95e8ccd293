/** Version and revision for `version` and mxl_fabric_exporter_build_info. */
import { readFileSync } from 'node:fs';

export interface BuildInfo {
  readonly version: string;
  readonly revision: string;
  readonly nodeVersion: string;
}

function readJson(rel: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

// src/build-info.ts and dist/build-info.js both sit one level below the package root;
// dist/build.json is written by scripts/stamp.mjs at build time.
const pkg = readJson('../package.json');
const stamp = readJson('./build.json');

export const BUILD: BuildInfo = {
  version: typeof pkg.version === 'string' ? pkg.version : 'unknown',
  revision: typeof stamp.revision === 'string' ? stamp.revision : 'unknown',
  nodeVersion: process.version,
};
