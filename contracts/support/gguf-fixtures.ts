// GGUF fixtures (../shared/models/gguf/*.gguf.gz, never copied into the repository) and their references
// (../shared/models/reference/*.json). The node lane reads them from disk and gunzips with node:zlib; the
// browser lane fetches them through the Vite dev server (vitest.config.ts allows ../shared/models) and
// gunzips with DecompressionStream. Each file is checked once against its documented length and SHA-256
// prefix (../shared/models/README.md), then kept decompressed for the rest of the test file; callers get a
// fresh copy, so a test that corrupts its bytes never disturbs another.
//
// An absent fixture gives `undefined`, and suites skip what needs it (`it.skipIf(x === undefined)`), so a
// clone without ../shared shows skipped tests, not passed ones. With TENON_REQUIRE_MODELS=1 or CI set, an
// absent fixture throws instead: fixture-dependent tests fail, never skip, under CI.

/** Uncompressed length and SHA-256 prefix of every GGUF fixture (../shared/models/README.md). */
export const GGUF_FIXTURES = {
  'stories260K-f32.gguf': { bytes: 1_185_376, sha256: '047bf46455a54493' },
  'tiny-llama-f32.gguf': { bytes: 13_654_400, sha256: 'b53db502bf35bebc' },
  'tiny-llama-F16.gguf': { bytes: 6_838_720, sha256: 'ed96d504c6ff0672' },
  'tiny-llama-Q8_0.gguf': { bytes: 3_643_840, sha256: '256c39df79b40b16' },
  'tiny-llama-Q4_0.gguf': { bytes: 1_973_696, sha256: '7bf266471873da30' },
  'tiny-llama-Q4_K_M.gguf': { bytes: 2_091_968, sha256: '3fd0c511dddc22f3' },
  'tiny-llama-Q6_K.gguf': { bytes: 2_818_496, sha256: 'ee660582d224b437' },
  'tiny-qwen2-Q4_K_M.gguf': { bytes: 38_793_760, sha256: '9deee56c8aa18470' },
  'tiny-moe-f32.gguf': { bytes: 15_230_592, sha256: 'cf3a8a6bf239a834' },
  'tiny-moe-Q8_0.gguf': { bytes: 4_064_960, sha256: '73a70c309b0d1d6c' },
  'tiny-moe-Q4_K_M.gguf': { bytes: 2_341_824, sha256: 'a085b3915a3402d1' },
  'llama3-vocab.gguf': { bytes: 7_818_496, sha256: '7d6843ec0fca2cf3' },
} as const;

export type GgufFixture = keyof typeof GGUF_FIXTURES;

export const GGUF_FIXTURE_NAMES = Object.keys(GGUF_FIXTURES) as GgufFixture[];

/** Reference files beside the fixtures. */
export type GgufReference =
  | 'greedy-llamacpp.json'
  | 'exact-numpy.json'
  | 'tokenize-tok512.json'
  | 'tokenize-qwen.json'
  | 'tokenize-llama3.json'
  | 'chat-template-qwen.json'
  | 'chat-template-llama3.json';

/** The two bytes every gzip member starts with. */
const GZIP_MAGIC = [0x1f, 0x8b] as const;

const inBrowser = typeof window !== 'undefined' && typeof document !== 'undefined';

/** True when absent fixtures must fail the run (TENON_REQUIRE_MODELS=1 or CI set). */
export function ggufFixturesRequired(): boolean {
  if (typeof process === 'undefined') return false;
  const env = process.env ?? {};
  return env['TENON_REQUIRE_MODELS'] === '1' || (env['CI'] !== undefined && env['CI'] !== '' && env['CI'] !== 'false');
}

const cache = new Map<GgufFixture, Promise<Uint8Array | undefined>>();

/** The fixture's uncompressed bytes (a fresh copy per call), or undefined when it is absent. */
export async function readGgufFixture(name: GgufFixture): Promise<Uint8Array | undefined> {
  let pending = cache.get(name);
  if (pending === undefined) {
    pending = loadFixture(name);
    cache.set(name, pending);
  }
  const bytes = await pending;
  return bytes === undefined ? undefined : bytes.slice();
}

/** The parsed reference JSON, or undefined when it is absent (or an error when required). */
export async function readGgufReference(name: GgufReference): Promise<unknown> {
  const raw = await readShared(`reference/${name}`);
  if (raw === undefined) {
    if (ggufFixturesRequired()) throw new Error(`reference ../shared/models/reference/${name} is required (TENON_REQUIRE_MODELS or CI) but absent`);
    return undefined;
  }
  return JSON.parse(new TextDecoder().decode(raw));
}

async function loadFixture(name: GgufFixture): Promise<Uint8Array | undefined> {
  const compressed = await readShared(`gguf/${name}.gz`);
  if (compressed === undefined) {
    if (ggufFixturesRequired()) throw new Error(`model fixture ../shared/models/gguf/${name}.gz is required (TENON_REQUIRE_MODELS or CI) but absent`);
    return undefined;
  }
  const bytes = isGzip(compressed) ? await gunzip(compressed) : compressed;
  const expected = GGUF_FIXTURES[name];
  if (bytes.length !== expected.bytes) throw new Error(`fixture ${name} has ${bytes.length} bytes, the README says ${expected.bytes}`);
  const digest = await sha256Hex(bytes);
  if (!digest.startsWith(expected.sha256)) throw new Error(`fixture ${name} has SHA-256 ${digest}, the README says ${expected.sha256}...`);
  return bytes;
}

function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= GZIP_MAGIC.length && bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  if (!inBrowser) {
    const { gunzipSync } = await import('node:zlib');
    const out = gunzipSync(bytes);
    return new Uint8Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength));
  }
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A file under ../shared/models, or undefined when it does not exist. */
async function readShared(relative: string): Promise<Uint8Array | undefined> {
  if (!inBrowser) {
    const { readFile } = await import('node:fs/promises');
    const { fileURLToPath } = await import('node:url');
    const path = fileURLToPath(new URL(`../../../shared/models/${relative}`, import.meta.url));
    try {
      const data = await readFile(path);
      return new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return undefined;
      throw err;
    }
  }
  const { server } = await import('vitest/browser');
  const parent = server.config.root.replace(/\/+$/, '').replace(/\/[^/]*$/, '');
  const response = await fetch(`/@fs${parent.startsWith('/') ? '' : '/'}${parent}/shared/models/${relative}`);
  if (response.status === 404) return undefined;
  if (!response.ok) throw new Error(`fetching model fixture ${relative} failed with HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** Path of a fixture's .gz file on disk (node lane only), for tests that open it as a file. */
export async function ggufFixturePath(name: GgufFixture): Promise<string> {
  const { fileURLToPath } = await import('node:url');
  return fileURLToPath(new URL(`../../../shared/models/gguf/${name}.gz`, import.meta.url));
}
