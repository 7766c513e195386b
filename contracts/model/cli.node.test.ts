// Plan: the `tenon` CLI's model subcommands as a user runs them (the built dist/workers/tenon.js in a child
// Node process, on the decompressed GGUF fixtures written to a scratch folder):
//   - tokenize --json prints llama.cpp's ids (reference/tokenize-{qwen,llama3,tok512}.json) for strings
//     of each vocabulary kind, reading only the file's header through ranges; --special turns special-token
//     texts into their ids (without it they are plain text); --no-bos drops the BOS the vocabulary adds;
//   - render --json prints the chat template rendered as the reference Jinja implementation did
//     (reference/chat-template-{qwen,llama3}.json), bos_token/eos_token defaulting to the model's own and
//     other template variables passed through; a model without a template, a malformed input file and a
//     missing file exit 1 with their code and reason;
//   - generate on GGUF files: see the generate block.
// Control cases: the same text without --special, the same input with bos_token given explicitly.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { GGUF_MAX_HEADER_CHUNK, parseGguf } from '../../src/model/index.js';
import { readGgufFixture, readGgufReference } from '../support/gguf-fixtures.js';
import type { GgufFixture } from '../support/gguf-fixtures.js';
import { readModelFixture } from '../support/models.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const cli = fileURLToPath(new URL('../../dist/workers/tenon.js', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'tenon-cli-gguf-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Writes the decompressed fixture to the scratch folder; its path and data offset, or undefined when absent. */
async function fixtureFile(name: GgufFixture): Promise<{ path: string; dataOffset: number; size: number } | undefined> {
  const bytes = await readGgufFixture(name);
  if (bytes === undefined) return undefined;
  const path = join(scratch, name);
  writeFileSync(path, bytes);
  return { path, dataOffset: (await parseGguf(bytes)).dataOffset, size: bytes.length };
}

const qwen = await fixtureFile('tiny-qwen2-Q4_K_M.gguf');
const llama3 = await fixtureFile('llama3-vocab.gguf');
const stories = await fixtureFile('stories260K-f32.gguf');
const llama2c = (await readModelFixture('stories260K.bin')) === undefined ? undefined : fileURLToPath(new URL('../../../shared/models/stories260K.bin', import.meta.url));

interface TokenizeCase {
  readonly text: string;
  readonly ids: readonly number[];
}
interface ChatCase {
  readonly messages: readonly { role: string; content: string }[];
  readonly add_generation_prompt: boolean;
  readonly bos_token?: string;
  readonly rendered: string;
}
const tokQwen = (await readGgufReference('tokenize-qwen.json')) as TokenizeCase[] | undefined;
const tokLlama3 = (await readGgufReference('tokenize-llama3.json')) as TokenizeCase[] | undefined;
const tokTok512 = (await readGgufReference('tokenize-tok512.json')) as TokenizeCase[] | undefined;
const chatQwen = (await readGgufReference('chat-template-qwen.json')) as ChatCase[] | undefined;
const chatLlama3 = (await readGgufReference('chat-template-llama3.json')) as ChatCase[] | undefined;

/** Qwen's control tokens (tokenizer.json of Qwen2.5 / the fixture's vocabulary). */
const IM_START = 151644;
const IM_END = 151645;
/** Llama 3's <|begin_of_text|>. */
const LLAMA3_BOS = 128000;
/** tok512's BOS. */
const TOK512_BOS = 1;
/** Bytes of the four-byte "GGUF" peek the CLI makes before parsing (it tells GGUF from llama2.c). */
const MAGIC_PEEK = 4;

/** Most bytes a header-only command may read: the header, one chunk of read-ahead past it, the magic peek. */
function headerReadBound(file: { dataOffset: number; size: number }): number {
  return Math.min(file.size, file.dataOffset + GGUF_MAX_HEADER_CHUNK) + MAGIC_PEEK;
}

function run(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: repo, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

interface ReadStats {
  reads: number;
  bytes: number;
  largest: number;
  size: number;
}

function tokenizeJson(model: string, text: string, ...flags: string[]): { ids: number[]; tokens: string[]; read: ReadStats } {
  const r = run(['tokenize', '--model', model, '--text', text, ...flags, '--json']);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as { ids: number[]; tokens: string[]; read: ReadStats };
}

/** The reference case whose text contains `needle` (so the picked strings are named, not indexed). */
function pick(cases: readonly TokenizeCase[], needle: string): TokenizeCase {
  const c = cases.find((x) => x.text.includes(needle));
  if (c === undefined) throw new Error(`no reference string contains ${JSON.stringify(needle)}`);
  return c;
}

function writeInput(name: string, value: unknown): string {
  const path = join(scratch, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

function renderJson(model: string, input: string): { prompt: string; read: ReadStats } {
  const r = run(['render', '--model', model, '--input', input, '--json']);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as { prompt: string; read: ReadStats };
}

/** The failure line a coded error prints, split into code and reason. */
function failure(r: { status: number | null; stdout: string; stderr: string }): { status: number | null; code: string; reason: string; stdout: string } {
  const m = /^tenon: ([A-Z]+) ([a-z0-9-]+): /.exec(r.stderr);
  return { status: r.status, code: m?.[1] ?? '', reason: m?.[2] ?? '', stdout: r.stdout };
}

describe('tenon tokenize', () => {
  it.skipIf(qwen === undefined || tokQwen === undefined)('[SHIP-cli-tokenize] Qwen2 (byte-level BPE): llama.cpp\'s ids for plain, contraction, CJK and emoji strings; only the header is read, by ranges', () => {
    for (const needle of ['Hello world', "I'm", '你好', '👨\u200d👩\u200d👧']) {
      const c = pick(tokQwen!, needle);
      const out = tokenizeJson(qwen!.path, c.text);
      expect(out.ids).toEqual(c.ids);
      expect(out.tokens.length).toBe(c.ids.length);
      // The 39 MB file: the reads stop within one header chunk past the header (the reader reads ahead in
      // chunks) and none is larger than a header chunk.
      expect(out.read.size).toBe(qwen!.size);
      expect(out.read.bytes).toBeLessThanOrEqual(headerReadBound(qwen!));
      expect(out.read.largest).toBeLessThanOrEqual(GGUF_MAX_HEADER_CHUNK);
      expect(out.read.reads).toBeGreaterThan(1);
    }
  });

  it.skipIf(llama3 === undefined || tokLlama3 === undefined)('[SHIP-cli-tokenize] Llama 3 (vocabulary-only file): llama.cpp\'s ids after the BOS the vocabulary adds; --no-bos gives exactly the reference', () => {
    for (const needle of ['Numbers', 'https://', 'Unicode']) {
      const c = pick(tokLlama3!, needle);
      expect(tokenizeJson(llama3!.path, c.text).ids).toEqual([LLAMA3_BOS, ...c.ids]);
      expect(tokenizeJson(llama3!.path, c.text, '--no-bos').ids).toEqual(c.ids);
    }
  });

  it.skipIf(stories === undefined || tokTok512 === undefined)('[SHIP-cli-tokenize] tok512 in GGUF (SentencePiece): llama.cpp\'s ids with --no-bos, BOS first without it', () => {
    for (const needle of ['Once upon', 'leading spaces']) {
      const c = pick(tokTok512!, needle);
      expect(tokenizeJson(stories!.path, c.text, '--no-bos').ids).toEqual(c.ids);
      expect(tokenizeJson(stories!.path, c.text).ids).toEqual([TOK512_BOS, ...c.ids]);
    }
  });

  it.skipIf(qwen === undefined)('[SHIP-cli-tokenize] --special turns <|im_start|> and <|im_end|> into their ids; without it they are plain text', () => {
    const text = '<|im_start|>user\nHi<|im_end|>';
    const special = tokenizeJson(qwen!.path, text, '--special');
    expect(special.ids[0]).toBe(IM_START);
    expect(special.ids.at(-1)).toBe(IM_END);
    expect(special.tokens[0]).toBe('<|im_start|>');
    const plain = tokenizeJson(qwen!.path, text);
    expect(plain.ids).not.toContain(IM_START);
    expect(plain.ids).not.toContain(IM_END);
    expect(plain.ids.length).toBeGreaterThan(special.ids.length);
  });
});

describe('tenon render', () => {
  it.skipIf(qwen === undefined || chatQwen === undefined)('[SHIP-cli-render] Qwen\'s template renders every reference conversation exactly, reading only the header', () => {
    expect(chatQwen!.length).toBeGreaterThanOrEqual(2);
    chatQwen!.forEach((c, i) => {
      const input = writeInput(`qwen-${i}.json`, { messages: c.messages, add_generation_prompt: c.add_generation_prompt });
      const out = renderJson(qwen!.path, input);
      expect(out.prompt).toBe(c.rendered);
      expect(out.read.bytes).toBeLessThanOrEqual(headerReadBound(qwen!));
      expect(out.read.largest).toBeLessThanOrEqual(GGUF_MAX_HEADER_CHUNK);
    });
  });

  it.skipIf(llama3 === undefined || chatLlama3 === undefined)('[SHIP-cli-render] Llama 3\'s template: bos_token defaults to the model\'s own <|begin_of_text|>; an explicit one is used as given', () => {
    chatLlama3!.forEach((c, i) => {
      expect(c.bos_token).toBe('<|begin_of_text|>');
      // The reference passed bos_token; the CLI must find the same text in the model when it is left out.
      const input = writeInput(`llama3-${i}.json`, { messages: c.messages, add_generation_prompt: c.add_generation_prompt });
      expect(renderJson(llama3!.path, input).prompt).toBe(c.rendered);
      const given = writeInput(`llama3-given-${i}.json`, { messages: c.messages, add_generation_prompt: c.add_generation_prompt, bos_token: '<BOS>' });
      expect(renderJson(llama3!.path, given).prompt).toBe(c.rendered.replace('<|begin_of_text|>', '<BOS>'));
    });
  });

  it.skipIf(qwen === undefined || chatQwen === undefined)('[SHIP-cli-render] other template variables reach the template (Qwen\'s enable_thinking: false); add_generation_prompt false leaves the assistant header out', () => {
    const c = chatQwen![0]!;
    const thinking = writeInput('qwen-thinking.json', { messages: c.messages, add_generation_prompt: true, enable_thinking: false });
    expect(renderJson(qwen!.path, thinking).prompt).toBe(`${c.rendered}<think>\n\n</think>\n\n`);
    const noPrompt = writeInput('qwen-no-prompt.json', { messages: c.messages, add_generation_prompt: false });
    expect(renderJson(qwen!.path, noPrompt).prompt).toBe(c.rendered.slice(0, -'<|im_start|>assistant\n'.length));
  });

  it.skipIf(qwen === undefined || stories === undefined || llama2c === undefined)('[SHIP-cli-errors] a model without a template, a malformed input, a missing file and a llama2.c model without its tokenizer exit 1 with code and reason', () => {
    const ok = writeInput('ok.json', { messages: [{ role: 'user', content: 'Hi' }], add_generation_prompt: true });
    expect(failure(run(['render', '--model', stories!.path, '--input', ok, '--json']))).toEqual({ status: 1, code: 'ENOTSUP', reason: 'no-chat-template', stdout: '' });
    expect(failure(run(['render', '--model', qwen!.path, '--input', writeInput('bad.json', '{ "messages": [ '), '--json']))).toEqual({ status: 1, code: 'EINVAL', reason: 'bad-json', stdout: '' });
    expect(failure(run(['render', '--model', qwen!.path, '--input', writeInput('roles.json', { messages: [{ content: 'no role' }] }), '--json']))).toEqual({ status: 1, code: 'EINVAL', reason: 'bad-chat-input', stdout: '' });
    expect(failure(run(['render', '--model', qwen!.path, '--input', writeInput('list.json', [{ role: 'user', content: 'Hi' }]), '--json']))).toEqual({ status: 1, code: 'EINVAL', reason: 'bad-chat-input', stdout: '' });
    expect(failure(run(['tokenize', '--model', join(scratch, 'absent.gguf'), '--text', 'x', '--json']))).toEqual({ status: 1, code: 'ENOENT', reason: 'no-such-file', stdout: '' });
    expect(failure(run(['tokenize', '--model', llama2c!, '--text', 'x', '--json']))).toEqual({ status: 1, code: 'EINVAL', reason: 'no-tokenizer', stdout: '' });
    const usage = run(['tokenize', '--model', qwen!.path, '--json']);
    expect(usage.status).toBe(2);
    expect(usage.stderr.startsWith('tenon: --text is required\nusage: tenon generate')).toBe(true);
  });
});
