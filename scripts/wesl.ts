// A Vite plugin that links WESL shader modules (shaders/**/*.wesl: WGSL plus `import` and `@if`
// conditional translation, https://wesl-lang.dev) into plain WGSL at build and test time, with the
// `wesl` linker installed from npm. Nothing is linked or concatenated at run time: the bundles and both
// test lanes get finished WGSL strings, one per declared variant.
//
// `import variants from '../shaders/x.wesl?wesl'` gives `{ [key]: wgsl }`. The root module declares
// which variants it is built in, one header line each:
//
//   // variant: rope+bias+subgroups
//
// names the conditions set true for that link (every other condition is false; `base` alone names the
// link with none); the key is those names sorted and joined with '+' (`bias+rope+subgroups`; '' for
// `base`). The variants are linked from every .wesl file under the shader root (module path
// `package::lib::packed` = shaders/lib/packed.wesl); only what the root reaches is emitted. A root without a variant line, or a link error, fails the importing build or
// test with the linker's message. Every .wesl file is a watch file of the importing module, so an edit
// (or a mutant) in a shared module invalidates the kernels that import it.
//
// Why WESL (evaluated for issue 11, "shared WGSL and feature variants without copies"). The kernels
// written before it repeat their preamble (params, bounds, reductions, the per-kind dequantization) in
// every file, and a `subgroups` variant doubles each one (qmatmul: 10 kinds x 2 variants = 20 files).
// WGSL's own specialization, `override` constants, cannot add or remove a binding, an `enable` directive or
// a builtin parameter, so it cannot express those variants; string concatenation at run time is what
// tenon refuses (DESIGN.md). WESL adds exactly the two missing pieces, with a small, maintained linker:
// `import` between modules (shaders/lib/*.wesl: the packed-unit decoder for every kind, the workgroup
// reduction in both variants, RoPE's rotation) and `@if` on declarations, directives, parameters and
// statements (`subgroups`, and the forms and bias of fused_matvec), all resolved here at build time,
// so no WESL code ships and a browser only ever compiles plain WGSL. Kinds stay `override` constants
// (one pipeline per kind, no source variant). Limits of the choice: a module cannot be generic over a
// binding, so shared code takes loaded words (lib/packed.wesl) and roots declare their own bindings;
// conditions are global to a link, so a root lists its variants explicitly. No `shader-f16` variant is
// built: f16 arithmetic would change the f32 accumulation the references are checked against (every f16
// the kernels read is widened exactly by unpack2x16float, which needs no feature); a condition is where
// one would go. Older kernels (shaders/*.wgsl, imported `?raw`) are not rewritten.
import { readFile, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'vite';

const QUERY = '?wesl';
/** Ids this plugin loads: a .wesl root with the ?wesl query. */
const WESL_ID = /\.wesl\?wesl$/;
const SUFFIX = '.wesl';
/** The variant line of the link with no condition set. */
const BASE = 'base';
/** A root module's variant declaration: `// variant: a+b+c`. */
const VARIANT_LINE = /^\/\/ variant: *([A-Za-z_][A-Za-z0-9_]*(?:\+[A-Za-z_][A-Za-z0-9_]*)*) *$/gm;

interface Linker {
  link(params: { weslSrc: Record<string, string>; rootModuleName: string; conditions: Record<string, boolean> }): Promise<{ dest: string }>;
}

let linker: Promise<Linker> | undefined;

function loadLinker(): Promise<Linker> {
  // Loaded on the first .wesl import only, so configs that import none pay nothing.
  linker ??= import('wesl') as unknown as Promise<Linker>;
  return linker;
}

/** Every .wesl file under `dir`, recursively. */
async function weslFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(entries.map((e) => (e.isDirectory() ? weslFiles(join(dir, e.name)) : Promise.resolve(e.name.endsWith(SUFFIX) ? [join(dir, e.name)] : []))));
  return nested.flat();
}

/** The canonical key of a condition set: names sorted, joined with '+'. */
export function variantKey(names: readonly string[]): string {
  return [...names].sort().join('+');
}

/** The variants a root module declares, as condition-name lists. */
export function declaredVariants(file: string, text: string): string[][] {
  const variants = [...text.matchAll(VARIANT_LINE)].map((m) => (m[1] === BASE ? [] : m[1]!.split('+')));
  if (variants.length === 0) throw new Error(`${file}: a WESL root module declares its variants, one '// variant: a+b' line each`);
  return variants;
}

/** Links every declared variant of the root module `file` against the .wesl modules under `shaderRoot`. */
export async function linkVariants(shaderRoot: string, file: string): Promise<{ variants: Record<string, string>; sources: string[] }> {
  const sources = await weslFiles(shaderRoot);
  const weslSrc: Record<string, string> = {};
  for (const path of sources) weslSrc[`./${relative(shaderRoot, path).split(sep).join('/')}`] = await readFile(path, 'utf8');
  const rootModuleName = `./${relative(shaderRoot, file).split(sep).join('/')}`;
  const rootText = weslSrc[rootModuleName];
  if (rootText === undefined) throw new Error(`${file}: not under the shader root ${shaderRoot}`);
  const { link } = await loadLinker();
  const variants: Record<string, string> = {};
  for (const names of declaredVariants(file, rootText)) {
    const key = variantKey(names);
    if (key in variants) throw new Error(`${file}: variant ${key} is declared twice`);
    const conditions = Object.fromEntries(names.map((n) => [n, true]));
    variants[key] = (await link({ weslSrc, rootModuleName, conditions })).dest;
  }
  return { variants, sources };
}

/** `shaderRoot`: the directory module paths start from (default: the repository's shaders/). */
export function weslShaders(shaderRoot = fileURLToPath(new URL('../shaders', import.meta.url))): Plugin {
  return {
    name: 'tenon-wesl',
    enforce: 'pre',
    load: {
      // The bundler calls the hook only for matching ids.
      filter: { id: WESL_ID },
      async handler(id) {
        if (!WESL_ID.test(id)) return null;
        const file = id.slice(0, -QUERY.length);
        const { variants, sources } = await linkVariants(shaderRoot, file);
        for (const source of sources) this.addWatchFile(source);
        return { code: `export default Object.freeze(${JSON.stringify(variants)});`, map: { mappings: '' } };
      },
    },
  };
}
