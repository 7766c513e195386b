// A Vite plugin that assembles the WebAssembly kernels from their readable text sources (wasm/*.wat) at
// build and test time with wabt (the WebAssembly Binary Toolkit's own assembler, compiled to JS and
// installed from npm): no prebuilt binary is ever committed, and no compiler outside npm is needed.
//
// `import modules from '../wasm/x.wat?wasm'` gives `{ plain, shared }`: two binaries of the same source,
// one importing an ordinary memory and one importing a shared memory (a module's memory import must say
// which, and the host provider has both kinds). The source declares its memory import exactly once as
// MEMORY_IMPORT below; the shared binary is assembled with that one declaration widened to a shared
// memory of SHARED_MAX_PAGES. The bytes are inlined as base64, so the library bundles, the Node CLI, the
// workers and both test lanes get them without fetching a file. Assembly errors fail the build (or the
// importing test) with wabt's message, which names the line and column.
import { readFile } from 'node:fs/promises';
import type { Plugin } from 'vite';

const QUERY = '?wasm';
/** The one memory import every kernel source declares (an ordinary memory of at least one page). */
export const MEMORY_IMPORT = '(import "env" "memory" (memory 1))';
/** wasm32's whole address space in 64 KiB pages: the maximum a shared memory must declare. */
const SHARED_MAX_PAGES = 65536;
const SHARED_IMPORT = `(import "env" "memory" (memory 1 ${SHARED_MAX_PAGES} shared))`;
/** Proposals the kernels use: 128-bit SIMD, and threads for the shared memory import. */
const FEATURES = { simd: true, threads: true } as const;

interface Wabt {
  parseWat(filename: string, text: string, features: typeof FEATURES): {
    resolveNames(): void;
    validate(features: typeof FEATURES): void;
    toBinary(options: Record<string, never>): { buffer: Uint8Array };
    destroy(): void;
  };
}

let wabt: Promise<Wabt> | undefined;

function loadWabt(): Promise<Wabt> {
  // Loaded on the first .wat import only, so configs that import none pay nothing.
  wabt ??= import('wabt').then((m) => (m.default as unknown as () => Promise<Wabt>)());
  return wabt;
}

async function assemble(file: string, text: string): Promise<Uint8Array> {
  const tools = await loadWabt();
  const module = tools.parseWat(file, text, FEATURES);
  try {
    module.resolveNames();
    module.validate(FEATURES);
    return module.toBinary({}).buffer;
  } finally {
    module.destroy();
  }
}

/** Both binaries of one kernel source; throws when the source does not declare MEMORY_IMPORT exactly once. */
export async function assembleKernels(file: string, text: string): Promise<{ plain: Uint8Array; shared: Uint8Array }> {
  const at = text.indexOf(MEMORY_IMPORT);
  if (at < 0 || text.indexOf(MEMORY_IMPORT, at + 1) >= 0) {
    throw new Error(`${file}: a kernel source declares its memory as ${MEMORY_IMPORT} exactly once`);
  }
  const shared = text.slice(0, at) + SHARED_IMPORT + text.slice(at + MEMORY_IMPORT.length);
  return { plain: await assemble(file, text), shared: await assemble(file, shared) };
}

const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

export function watKernels(): Plugin {
  return {
    name: 'tenon-wat',
    enforce: 'pre',
    async load(id) {
      if (!id.endsWith(`.wat${QUERY}`)) return null;
      const file = id.slice(0, -QUERY.length);
      this.addWatchFile(file);
      const { plain, shared } = await assembleKernels(file, await readFile(file, 'utf8'));
      const code = [
        'const decode = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));',
        `export default { plain: decode(${JSON.stringify(base64(plain))}), shared: decode(${JSON.stringify(base64(shared))}) };`,
      ].join('\n');
      return { code, map: { mappings: '' } };
    },
  };
}
