// A Vite plugin that assembles the WebAssembly kernels from their readable text sources (wasm/*.wat) at
// build and test time with wabt (the WebAssembly Binary Toolkit's own assembler, compiled to JS and
// installed from npm): no prebuilt binary is ever committed, and no compiler outside npm is needed.
//
// `import modules from '../wasm/x.wat?wasm'` gives `{ plain, shared, relaxed: { plain, shared } }`: binaries
// of the same source, one importing an ordinary memory and one importing a shared memory (a module's memory
// import must say which, and the host provider has both kinds). The source declares its memory import
// exactly once as MEMORY_IMPORT below; the shared binary is assembled with that one declaration widened to
// a shared memory of SHARED_MAX_PAGES.
// `relaxed` holds the same two built from the source rewritten by `relaxWat` for engines with relaxed
// SIMD: every multiply-accumulate written `(f32x4.add (local.get $acc) (f32x4.mul B C))` becomes
// `(f32x4.relaxed_madd B C (local.get $acc))`, which an engine may fuse (one rounding) or not. Text
// between a RELAXED_OFF line and the next RELAXED_ON line is left as written (kernels whose results
// must stay bit-identical to their scalar twin). One readable source, two instruction sets.
// Build-only text (`forBuild`, applied first): lines between RELAXED_ONLY_BEGIN and RELAXED_ONLY_END are
// kept only in the relaxed build, lines between PLAIN_ONLY_BEGIN and PLAIN_ONLY_END only in the plain
// one (each removed region becomes as many empty lines, so wabt's line numbers stay those of the file).
// A kernel with a relaxed-only body (e.g. relaxed SIMD's integer dot) is written twice, with the same
// name and signature, once in each kind of region. The bytes are inlined as base64, so the library bundles, the Node CLI, the
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
/** The relaxed build adds the relaxed SIMD proposal. */
const RELAXED_FEATURES = { simd: true, threads: true, relaxed_simd: true } as const;
/** A line containing this marker starts text that `relaxWat` leaves unchanged ... */
export const RELAXED_OFF = ';; relaxed-simd: off';
/** ... up to a line containing this one. */
export const RELAXED_ON = ';; relaxed-simd: on';
/** Lines from one containing this marker to one containing RELAXED_ONLY_END exist only in the relaxed build ... */
export const RELAXED_ONLY_BEGIN = ';; relaxed-only: begin';
export const RELAXED_ONLY_END = ';; relaxed-only: end';
/** ... and lines from PLAIN_ONLY_BEGIN to PLAIN_ONLY_END only in the plain build. */
export const PLAIN_ONLY_BEGIN = ';; plain-only: begin';
export const PLAIN_ONLY_END = ';; plain-only: end';
const ACCUMULATE = '(f32x4.add (local.get ';
const MUL = '(f32x4.mul ';

type Features = typeof FEATURES | typeof RELAXED_FEATURES;

interface Wabt {
  parseWat(filename: string, text: string, features: Features): {
    resolveNames(): void;
    validate(features: Features): void;
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

async function assemble(file: string, text: string, features: Features): Promise<Uint8Array> {
  const tools = await loadWabt();
  const module = tools.parseWat(file, text, features);
  try {
    module.resolveNames();
    module.validate(features);
    return module.toBinary({}).buffer;
  } finally {
    module.destroy();
  }
}

/** The index just past the balanced s-expression that opens at text[open] ('('). */
function closeOf(text: string, open: number, file: string): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return i + 1;
  }
  throw new Error(`${file}: unbalanced parentheses at offset ${open}`);
}

/** Index of the next non-blank character at or after `at`. */
function skipBlank(text: string, at: number): number {
  while (at < text.length && /\s/.test(text[at]!)) at++;
  return at;
}

/** One stretch of text (no RELAXED_OFF regions) with its multiply-accumulates made relaxed_madd. */
function relaxStretch(text: string, file: string): string {
  let out = '';
  let from = 0;
  for (let at = text.indexOf(ACCUMULATE); at >= 0; at = text.indexOf(ACCUMULATE, at + 1)) {
    const accOpen = at + '(f32x4.add '.length;
    const accEnd = closeOf(text, accOpen, file);
    const mul = skipBlank(text, accEnd);
    if (!text.startsWith(MUL, mul)) continue;
    const b = skipBlank(text, mul + MUL.length);
    const bEnd = closeOf(text, b, file);
    const c = skipBlank(text, bEnd);
    const cEnd = closeOf(text, c, file);
    const mulClose = skipBlank(text, cEnd);
    const addClose = skipBlank(text, mulClose + 1);
    if (text[b] !== '(' || text[c] !== '(' || text[mulClose] !== ')' || text[addClose] !== ')') {
      throw new Error(`${file}: a multiply-accumulate at offset ${at} is not (f32x4.add (local.get $a) (f32x4.mul (..) (..)))`);
    }
    out += `${text.slice(from, at)}(f32x4.relaxed_madd ${text.slice(b, bEnd)} ${text.slice(c, cEnd)} ${text.slice(accOpen, accEnd)})`;
    from = addClose + 1;
    at = from - 1;
  }
  return out + text.slice(from);
}

/** The relaxed-SIMD form of a kernel source (see the header); RELAXED_OFF .. RELAXED_ON text unchanged. */
export function relaxWat(text: string, file = 'source'): string {
  let out = '';
  let from = 0;
  for (;;) {
    const off = text.indexOf(RELAXED_OFF, from);
    if (off < 0) return out + relaxStretch(text.slice(from), file);
    const on = text.indexOf(RELAXED_ON, off);
    if (on < 0) throw new Error(`${file}: ${RELAXED_OFF} without a following ${RELAXED_ON}`);
    out += relaxStretch(text.slice(from, off), file) + text.slice(off, on);
    from = on;
  }
}

/**
 * The source of one build (see the header): the other build's regions (marker lines included) blanked
 * to empty lines. Throws on a begin marker without its end, or an end marker without its begin.
 */
export function forBuild(text: string, relaxed: boolean, file = 'source'): string {
  const lines = text.split('\n');
  const [dropBegin, dropEnd] = relaxed ? [PLAIN_ONLY_BEGIN, PLAIN_ONLY_END] : [RELAXED_ONLY_BEGIN, RELAXED_ONLY_END];
  const [keepBegin, keepEnd] = relaxed ? [RELAXED_ONLY_BEGIN, RELAXED_ONLY_END] : [PLAIN_ONLY_BEGIN, PLAIN_ONLY_END];
  let open: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const begin = line.includes(dropBegin) ? dropBegin : line.includes(keepBegin) ? keepBegin : undefined;
    const end = line.includes(dropEnd) ? dropEnd : line.includes(keepEnd) ? keepEnd : undefined;
    if (begin !== undefined) {
      if (open !== undefined) throw new Error(`${file}:${i + 1}: ${begin} inside an open ${open} region`);
      open = begin;
    }
    const dropping = open === dropBegin;
    if (end !== undefined) {
      if (open === undefined || (end === dropEnd) !== (open === dropBegin)) throw new Error(`${file}:${i + 1}: ${end} without its begin marker`);
      open = undefined;
    }
    if (dropping) lines[i] = '';
  }
  if (open !== undefined) throw new Error(`${file}: ${open} without its end marker`);
  return lines.join('\n');
}

/** The binaries of one kernel source; throws when the source does not declare MEMORY_IMPORT exactly once. */
export async function assembleKernels(
  file: string,
  text: string,
): Promise<{ plain: Uint8Array; shared: Uint8Array; relaxed: { plain: Uint8Array; shared: Uint8Array } }> {
  const at = text.indexOf(MEMORY_IMPORT);
  if (at < 0 || text.indexOf(MEMORY_IMPORT, at + 1) >= 0) {
    throw new Error(`${file}: a kernel source declares its memory as ${MEMORY_IMPORT} exactly once`);
  }
  const widen = (source: string): string => source.replace(MEMORY_IMPORT, SHARED_IMPORT);
  const plain = forBuild(text, false, file);
  const relaxed = relaxWat(forBuild(text, true, file), file);
  return {
    plain: await assemble(file, plain, FEATURES),
    shared: await assemble(file, widen(plain), FEATURES),
    relaxed: { plain: await assemble(file, relaxed, RELAXED_FEATURES), shared: await assemble(file, widen(relaxed), RELAXED_FEATURES) },
  };
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
      const { plain, shared, relaxed } = await assembleKernels(file, await readFile(file, 'utf8'));
      const pair = (p: Uint8Array, s: Uint8Array): string =>
        `{ plain: decode(${JSON.stringify(base64(p))}), shared: decode(${JSON.stringify(base64(s))}) }`;
      const code = [
        'const decode = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));',
        `const both = ${pair(plain, shared)};`,
        `export default { ...both, relaxed: ${pair(relaxed.plain, relaxed.shared)} };`,
      ].join('\n');
      return { code, map: { mappings: '' } };
    },
  };
}
