// Plan: the `tenon` CLI's model subcommands as a user runs them (the built dist/workers/tenon.js in a child
// Node process, on the decompressed GGUF fixtures written to a scratch folder):
//   - tokenize --json prints llama.cpp's ids (reference/tokenize-{qwen,llama3,tok512}.json) for strings
//     of each vocabulary kind, reading only the file's header through ranges; --special turns special-token
//     texts into their ids (without it they are plain text); --no-bos drops the BOS the vocabulary adds;
//   - render --json prints the chat template rendered as the reference Jinja implementation did
//     (reference/chat-template-{qwen,llama3}.json), bos_token/eos_token defaulting to the model's own and
//     other template variables passed through; a model without a template, a malformed input file and a
//     missing file exit 1 with their code and reason;
//   - generate --json on GGUF files reads the model by ranges and prints llama.cpp's greedy ids
//     (reference/greedy-llamacpp.json) wherever llama.cpp's top-two gap exceeds 0.5 (tiny-llama-Q4_0 on the
//     host provider and on Dawn; stories260K-f32.gguf gives exactly the ids of stories260K.bin); --chat
//     renders the model's template around --prompt (or the messages of --input, with --system) and prints
//     the rendered prompt and its ids, equal to llama.cpp's; a model without a template is refused before
//     anything runs.
// Control cases: the same text without --special, the same input with bos_token given explicitly.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { contextPlan } from '../../src/cli/tenon.js';
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
const q4 = await fixtureFile('tiny-llama-Q4_0.gguf');
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
interface GreedyCase {
  readonly prompt: string;
  readonly prompt_ids: readonly number[];
  readonly generated: readonly number[];
  readonly steps: readonly { readonly top: readonly (readonly [number, number])[] }[];
}
const greedy = (await readGgufReference('greedy-llamacpp.json')) as Record<string, GreedyCase[]> | undefined;
/** llama.cpp's greedy choice is a fair oracle where its top two logits differ by more than this (README). */
const FAIR_GAP = 0.5;

/** Qwen's control tokens (tokenizer.json of Qwen2.5 / the fixture's vocabulary). */
const IM_START = 151644;
const IM_END = 151645;
/** Llama 3's <|begin_of_text|>. */
const LLAMA3_BOS = 128000;
/** tok512's BOS. */
const TOK512_BOS = 1;
/** stories260K-f32.gguf's llama.context_length. */
const STORIES_CONTEXT = 128;
/** Bytes the chained decode reads back per step: the chosen token id. */
const TOKEN_ID_BYTES = 4;
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

interface GenerateOut {
  provider: string;
  model: { format: string; architecture: string };
  promptIds: number[];
  renderedPrompt?: string;
  generatedIds: number[];
  text: string;
  stop: string;
  maxSeq: number;
  decode: { mode: string; queueSubmits: number; hostAwaits: number; bytesReadBack: number };
  read: ReadStats;
}

function generateJson(args: string[]): GenerateOut {
  const r = run(['generate', ...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as GenerateOut;
}

/**
 * Checks greedy ids against llama.cpp's: equal step by step while they agree; where they first differ,
 * llama.cpp's own top two were within FAIR_GAP (a close call, after which the sequences part). Returns how
 * many ids agreed.
 */
function expectGreedyAgreement(ours: readonly number[], ref: GreedyCase): number {
  let i = 0;
  while (i < ours.length && i < ref.generated.length && ours[i] === ref.generated[i]) i++;
  if (i < Math.min(ours.length, ref.generated.length)) {
    const [a, b] = ref.steps[i]!.top;
    expect(a![1] - b![1], `step ${i}: ours ${ours[i]}, llama.cpp ${ref.generated[i]} with a clear lead`).toBeLessThanOrEqual(FAIR_GAP);
  }
  return i;
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

describe('tenon generate on GGUF', () => {
  it.skipIf(q4 === undefined || greedy === undefined)('[SHIP-cli-generate] tiny-llama-Q4_0.gguf on the host provider: llama.cpp\'s prompt ids and greedy ids wherever its gap allows, read by ranges', () => {
    for (const ref of greedy!['tiny-llama-Q4_0.gguf']!) {
      const out = generateJson(['--model', q4!.path, '--prompt', ref.prompt, '--steps', String(ref.generated.length), '--provider', 'host']);
      expect(out.model).toMatchObject({ format: 'gguf', architecture: 'llama' });
      expect(out.promptIds).toEqual(ref.prompt_ids);
      expect(out.generatedIds.length).toBe(ref.generated.length);
      expect(out.stop).toBe('max-tokens');
      // Both prompts start with a step whose gap is clear: at least the first id must agree.
      expect(expectGreedyAgreement(out.generatedIds, ref)).toBeGreaterThanOrEqual(1);
      expect(out.read.size).toBe(q4!.size);
      expect(out.read.largest).toBeLessThan(out.read.size);
      expect(out.read.reads).toBeGreaterThan(2);
    }
  });

  it.skipIf(q4 === undefined || greedy === undefined)('[SHIP-cli-generate] tiny-llama-Q4_0.gguf on Dawn (WebGPU): the same prompt ids and greedy agreement', () => {
    const ref = greedy!['tiny-llama-Q4_0.gguf']![0]!;
    const steps = 8;
    const out = generateJson(['--model', q4!.path, '--prompt', ref.prompt, '--steps', String(steps), '--provider', 'webgpu']);
    expect(out.provider).toBe('webgpu');
    expect(out.promptIds).toEqual(ref.prompt_ids);
    expect(out.generatedIds.length).toBe(steps);
    expect(expectGreedyAgreement(out.generatedIds, ref)).toBeGreaterThanOrEqual(1);
  });

  it.skipIf(stories === undefined || llama2c === undefined || greedy === undefined)('[SHIP-cli-generate] stories260K-f32.gguf prints exactly the ids of stories260K.bin with its tokenizer (and llama.cpp\'s)', () => {
    const ref = greedy!['stories260K-f32.gguf']![0]!;
    const steps = ['--prompt', ref.prompt, '--steps', String(ref.generated.length), '--provider', 'host'];
    const gguf = generateJson(['--model', stories!.path, ...steps]);
    const tok512 = fileURLToPath(new URL('../../../shared/models/tok512.bin', import.meta.url));
    const bin = generateJson(['--model', llama2c!, '--tokenizer', tok512, ...steps]);
    expect(bin.model.format).not.toBe('gguf');
    expect(gguf.model.format).toBe('gguf');
    expect(gguf.promptIds).toEqual(ref.prompt_ids);
    expect(bin.promptIds).toEqual(ref.prompt_ids);
    expect(gguf.generatedIds).toEqual(ref.generated);
    expect(bin.generatedIds).toEqual(gguf.generatedIds);
    expect(gguf.text).toBe(bin.text);
  });

  it.skipIf(qwen === undefined || greedy === undefined)('[SHIP-cli-generate] --special: llama.cpp\'s prompt ids for a prompt written with Qwen\'s control-token texts; without it those texts are plain text', () => {
    const ref = greedy!['tiny-qwen2-Q4_K_M.gguf']!.find((g) => g.prompt.startsWith('<|im_start|>'))!;
    const special = generateJson(['--model', qwen!.path, '--prompt', ref.prompt, '--special', '--steps', '1', '--provider', 'host']);
    expect(special.promptIds).toEqual(ref.prompt_ids);
    expect(special.generatedIds).toEqual(ref.generated.slice(0, 1));
    const plain = generateJson(['--model', qwen!.path, '--prompt', ref.prompt, '--steps', '1', '--provider', 'host']);
    expect(plain.promptIds).not.toContain(IM_START);
    expect(plain.promptIds.length).toBeGreaterThan(ref.prompt_ids.length);
  });

  it.skipIf(qwen === undefined || greedy === undefined || chatQwen === undefined)('[SHIP-cli-chat] --chat on tiny-qwen2: the template is applied (rendered prompt and its ids equal the references) and the reply starts with llama.cpp\'s greedy ids', () => {
    const c = chatQwen!.find((x) => x.messages.length === 1)!;
    const ref = greedy!['tiny-qwen2-Q4_K_M.gguf']!.find((g) => g.prompt === c.rendered)!;
    const steps = 4;
    const out = generateJson(['--model', qwen!.path, '--chat', '--prompt', c.messages[0]!.content, '--steps', String(steps), '--provider', 'host']);
    expect(out.model).toMatchObject({ format: 'gguf', architecture: 'qwen2' });
    expect(out.renderedPrompt).toBe(c.rendered);
    expect(out.promptIds).toEqual(ref.prompt_ids);
    expect(out.generatedIds.length).toBe(steps);
    expect(out.stop).toBe('max-tokens');
    // llama.cpp's first three steps have clear leads (gaps 1.8, 1.1, 5.2).
    expect(expectGreedyAgreement(out.generatedIds, ref)).toBeGreaterThanOrEqual(3);
    // The same prompt without --chat is plain text: no template, other ids.
    const plain = generateJson(['--model', qwen!.path, '--prompt', c.messages[0]!.content, '--steps', '1', '--provider', 'host']);
    expect(plain.renderedPrompt).toBeUndefined();
    expect(plain.promptIds).not.toContain(IM_START);
  });

  it.skipIf(qwen === undefined || chatQwen === undefined)('[SHIP-cli-chat] --chat --input renders a whole conversation (system message included) with its other template variables; --system adds one to --prompt', () => {
    const c = chatQwen!.find((x) => x.messages.some((m) => m.role === 'system'))!;
    const input = writeInput('conversation.json', { messages: c.messages });
    const out = generateJson(['--model', qwen!.path, '--chat', '--input', input, '--steps', '1', '--provider', 'host']);
    expect(out.renderedPrompt).toBe(c.rendered);
    const first = c.messages[0]!;
    const user = c.messages[1]!;
    const viaFlags = generateJson(['--model', qwen!.path, '--chat', '--system', first.content, '--prompt', user.content, '--steps', '1', '--provider', 'host']);
    expect(viaFlags.renderedPrompt).toBe(`<|im_start|>system\n${first.content}<|im_end|>\n<|im_start|>user\n${user.content}<|im_end|>\n<|im_start|>assistant\n`);
    expect(viaFlags.promptIds[0]).toBe(IM_START);
    // Other variables of --input reach the template (Qwen's enable_thinking: false adds an empty think block).
    const single = chatQwen!.find((x) => x.messages.length === 1)!;
    const thinking = writeInput('thinking.json', { messages: single.messages, enable_thinking: false });
    expect(generateJson(['--model', qwen!.path, '--chat', '--input', thinking, '--steps', '1', '--provider', 'host']).renderedPrompt).toBe(`${single.rendered}<think>\n\n</think>\n\n`);
  });

  it.skipIf(stories === undefined)('[SHIP-cli-errors] --chat on a model without a chat template exits 1 with ENOTSUP no-chat-template; --input without --chat is a usage error', () => {
    expect(failure(run(['generate', '--model', stories!.path, '--chat', '--prompt', 'Hi', '--steps', '1', '--provider', 'host', '--json']))).toEqual({ status: 1, code: 'ENOTSUP', reason: 'no-chat-template', stdout: '' });
    const usage = run(['generate', '--model', stories!.path, '--input', 'x.json', '--json']);
    expect(usage.status).toBe(2);
    expect(usage.stderr.startsWith('tenon: --input needs --chat')).toBe(true);
  });

  it('[SHIP-cli-context] the context plan: prompt plus steps, capped by the model\'s context (and 4096); the tokens that fit', () => {
    expect(contextPlan(5, 10, STORIES_CONTEXT)).toEqual({ maxSeq: 15, maxTokens: 10 });
    expect(contextPlan(5, 200, STORIES_CONTEXT)).toEqual({ maxSeq: STORIES_CONTEXT, maxTokens: STORIES_CONTEXT - 5 });
    expect(contextPlan(3, 10_000, 131_072)).toEqual({ maxSeq: 4096, maxTokens: 4093 });
    expect(contextPlan(STORIES_CONTEXT, 1, STORIES_CONTEXT)).toEqual({ maxSeq: STORIES_CONTEXT, maxTokens: 0 });
  });

  it.skipIf(stories === undefined || greedy === undefined)('[SHIP-cli-context] --steps 200 on stories260K (128 positions) on Dawn stops at the full context with every id that fit, as a chained greedy decode; a longer prompt is refused first', () => {
    const ref = greedy!['stories260K-f32.gguf']![0]!;
    const out = generateJson(['--model', stories!.path, '--prompt', ref.prompt, '--steps', '200', '--provider', 'webgpu']);
    expect(out.provider).toBe('webgpu');
    expect(out.stop).toBe('context-full');
    expect(out.maxSeq).toBe(STORIES_CONTEXT);
    expect(out.promptIds).toEqual(ref.prompt_ids);
    const n = out.generatedIds.length;
    expect(n).toBe(STORIES_CONTEXT - ref.prompt_ids.length);
    expect(out.generatedIds.slice(0, ref.generated.length)).toEqual(ref.generated);
    // One submission and one 4-byte readback per step: the prefill and each token's decode.
    expect(out.decode.mode).toBe('chained');
    expect(out.decode.queueSubmits).toBe(n + 1);
    expect(out.decode.hostAwaits).toBeLessThanOrEqual(n + 1);
    expect(out.decode.bytesReadBack).toBe(TOKEN_ID_BYTES * (n + 1));
    const long = run(['generate', '--model', stories!.path, '--prompt', 'Once upon a time '.repeat(STORIES_CONTEXT / 4), '--steps', '1', '--provider', 'host', '--json']);
    expect(failure(long)).toEqual({ status: 1, code: 'ENOSPC', reason: 'context-full', stdout: '' });
  });
});
