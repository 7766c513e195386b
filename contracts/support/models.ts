// Real model fixtures (../shared/models beside the repository; never copied into it). The node lane reads
// them from disk; the browser lane fetches them through the Vite dev server (vitest.config.ts allows
// ../shared/models in server.fs.allow). A fixture that is absent gives `undefined`, and the suites that
// need it skip their tests (`it.skipIf`), so a fresh clone without ../shared shows them as skipped, not
// passed. With TENON_REQUIRE_MODELS=1 or CI set, an absent fixture is an error instead, in both lanes:
// vitest.config.ts reads the environment and provides `tenonRequireModels`, read here with inject()
// (browser code cannot see process.env).
import { inject } from 'vitest';

/** Fixture files and their SHA-256 (../shared/models/README.md). */
export const MODEL_FIXTURES = {
  'stories260K.bin': 'b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696',
  'tok512.bin': '037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312',
} as const;

export type ModelFixture = keyof typeof MODEL_FIXTURES;

const inBrowser = typeof window !== 'undefined' && typeof document !== 'undefined';

/** Whether an absent fixture is an error: as the test lanes provide it, else (benchmark configs) from the environment. */
function required(): boolean {
  const provided = inject('tenonRequireModels');
  if (typeof provided === 'boolean') return provided;
  if (typeof process === 'undefined' || process.env === undefined) return false;
  const ci = process.env['CI'];
  return process.env['TENON_REQUIRE_MODELS'] === '1' || (ci !== undefined && ci !== '' && ci !== 'false');
}

/** The fixture's bytes (a fresh ArrayBuffer-backed copy per call), or undefined when it is absent. */
export async function readModelFixture(name: ModelFixture): Promise<Uint8Array | undefined> {
  const bytes = inBrowser ? await fetchFixture(name) : await readFixture(name);
  if (bytes === undefined && required()) throw new Error(`model fixture ../shared/models/${name} is required (TENON_REQUIRE_MODELS or CI) but absent`);
  return bytes;
}

async function readFixture(name: ModelFixture): Promise<Uint8Array | undefined> {
  const { readFile } = await import('node:fs/promises');
  const { fileURLToPath } = await import('node:url');
  const path = fileURLToPath(new URL(`../../../shared/models/${name}`, import.meta.url));
  try {
    const data = await readFile(path);
    return new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function fetchFixture(name: ModelFixture): Promise<Uint8Array | undefined> {
  const { server } = await import('vitest/browser');
  const parent = server.config.root.replace(/\/+$/, '').replace(/\/[^/]*$/, '');
  const response = await fetch(`/@fs${parent.startsWith('/') ? '' : '/'}${parent}/shared/models/${name}`);
  if (response.status === 404) return undefined;
  if (!response.ok) throw new Error(`fetching model fixture ${name} failed with HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}
