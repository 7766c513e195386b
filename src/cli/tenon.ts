// `tenon` command-line interface (Node, main thread). Subcommands (usage in args.ts):
//   generate  runs a model (GGUF, or a llama2.c checkpoint with --tokenizer) on Dawn (WebGPU) or the host
//             provider (--provider auto, the default: createProvider's choice, WebGPU on a hardware
//             adapter and the host on a software one such as SwiftShader; --verbose prints the choice and
//             its reason to stderr); --chat renders the model's chat template around the messages and
//             stops at the model's end-of-generation tokens. The session's cache holds the prompt plus
//             --steps positions, at most the model's context (and MAX_SEQ): a run asked for more tokens than
//             fit stops when the context is full (stop `context-full`), a prompt longer than the context
//             is refused first (ENOSPC context-full). On a software adapter Dawn's event pump is paced
//             (dawn-events.ts) for the run.
//   tokenize  prints the token ids of a text (--special: special-token texts become their tokens).
//   render    prints the chat template rendered for a JSON input file ({ messages, add_generation_prompt,
//             ... }), bos_token/eos_token defaulting to the model's own.
// Models are read through a Node file handle as a range source (model-file.ts): never one buffer. Text
// mode writes plain text to stdout; --json writes one JSON object and a newline: generate { provider (the
// one that ran), providerSelection { requested, kind, reason, adapter?, message }, adapter, model,
// promptIds, renderedPrompt (--chat), generatedIds, text, stop (max-tokens | end-of-generation |
// context-full), maxSeq, decode { mode, kernels (the per-layer dispatch list), dispatchesPerToken,
// queueSubmits, hostAwaits, bytesReadBack: the runtime's counters over the generation }, eventPump
// (WebGPU: `paced` or Dawn's own `immediate`), read,
// timings }, tokenize { ids, tokens,
// read }, render { prompt, read }, where `read` counts the file reads (reads, bytes, the
// largest single read, the file's size). --help prints the usage
// to stdout and exits 0. A failure prints `tenon: CODE reason: message` to stderr and exits 1 (usage
// errors: the message and the usage, exit 2). Dawn comes from the `webgpu` package, loaded only for
// --provider webgpu or auto (without it webgpu fails with ENOTSUP, reason webgpu-package-missing, and auto
// picks the host provider, reason no-webgpu);
// XDG_RUNTIME_DIR gets a private default first (runtime-dir.ts). Uses only the public API.
import { TenonError, TextSession, createProvider, createRuntime, isTenonError, renderChat } from '../index.js';
import type { ChatInput, ChatMessage, RuntimeStats, SelectedProvider, WebGPUProvider } from '../index.js';
import { USAGE, UsageError, parseArgs } from './args.js';
import type { GenerateArgs, ProviderKind, RenderArgs, TokenizeArgs } from './args.js';
import { loadModelFile, loadTokenizer, openModelFile, readSmallFile } from './model-file.js';
import { paceDawnEvents } from './dawn-events.js';
import { ensureRuntimeDir } from './runtime-dir.js';

const HELP_FLAGS = new Set(['--help', '-h', 'help']);

/** Exit statuses: success, a failed run (coded error), bad usage. */
const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

const OP = 'cli';

function out(text: string): void {
  process.stdout.write(text);
}

function printJson(value: unknown): void {
  out(`${JSON.stringify(value)}\n`);
}

async function makeProvider(kind: ProviderKind): Promise<SelectedProvider> {
  if (kind === 'host') return createProvider('host');
  ensureRuntimeDir();
  const webgpu = await import('webgpu').catch((err: unknown) => {
    if ((err as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    if (kind === 'auto') return undefined;
    throw new TenonError('ENOTSUP', 'the webgpu provider needs the `webgpu` package (npm install webgpu), or use --provider host', {
      op: OP,
      reason: 'webgpu-package-missing',
      cause: err,
    });
  });
  if (webgpu === undefined) return createProvider('auto');
  Object.assign(globalThis, webgpu.globals);
  return createProvider(kind, { gpu: webgpu.create([]) });
}

/** The chat input of a JSON file: an object, as apply_chat_template's keyword arguments (renderChat validates the fields). */
async function readChatInput(path: string): Promise<ChatInput> {
  const text = new TextDecoder().decode(await readSmallFile(path));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new TenonError('EINVAL', `${path} is not JSON: ${(err as Error).message}`, { op: OP, reason: 'bad-json', path, cause: err });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TenonError('EINVAL', `${path} must hold a JSON object { messages, add_generation_prompt, ... }`, { op: OP, reason: 'bad-chat-input', path });
  }
  return value as ChatInput;
}

async function tokenize(args: TokenizeArgs): Promise<void> {
  const file = await openModelFile(args.model);
  try {
    const tokenizer = await loadTokenizer(file, args.tokenizer);
    const ids = tokenizer.encode(args.text, { parseSpecial: args.special, ...(args.bos === undefined ? {} : { bos: args.bos }) });
    if (args.json) printJson({ ids, tokens: ids.map((id) => tokenizer.tokenText(id)), read: file.stats() });
    else out(`${ids.join(' ')}\n`);
  } finally {
    await file.close();
  }
}

async function render(args: RenderArgs): Promise<void> {
  const input = await readChatInput(args.input);
  const file = await openModelFile(args.model);
  try {
    const tokenizer = await loadTokenizer(file, args.tokenizer);
    const prompt = renderChat(tokenizer, input);
    if (args.json) printJson({ prompt, read: file.stats() });
    else out(prompt);
  } finally {
    await file.close();
  }
}

/** Longest KV cache the CLI allocates (positions); the model's own context when smaller. */
const MAX_SEQ = 4096;

/** The conversation of a --chat run: --input's object, or --system and --prompt as messages. */
async function chatInput(args: GenerateArgs): Promise<ChatInput> {
  if (args.input !== undefined) return readChatInput(args.input);
  const messages: ChatMessage[] = [];
  if (args.system !== undefined) messages.push({ role: 'system', content: args.system });
  messages.push({ role: 'user', content: args.prompt ?? '' });
  return { messages };
}

/**
 * Why a generation ended: every requested token came (`max-tokens`), the model chose an end token
 * (`end-of-generation`), or the context (the cache this run sized) has no room for another token.
 */
export type StopReason = 'max-tokens' | 'end-of-generation' | 'context-full';

/**
 * The cache a run needs: the prompt plus one position per generated token (the session decodes every token
 * it yields), at most the model's context and MAX_SEQ. `maxTokens` is what fits: a run asked for more stops
 * there with `context-full` instead of failing mid-generation.
 */
export function contextPlan(promptLength: number, steps: number, contextLength: number): { maxSeq: number; maxTokens: number } {
  const limit = Math.min(contextLength, MAX_SEQ);
  const maxSeq = Math.max(1, Math.min(limit, promptLength + steps));
  return { maxSeq, maxTokens: Math.max(0, Math.min(steps, maxSeq - promptLength)) };
}

/**
 * How the generation ran: the session's decode mode and dispatches per decode step, and the runtime's
 * counters over the whole generation (prefill included): queue submissions, host waits on the GPU and
 * bytes read back (a chained greedy decode: one submission, one wait and 4 bytes per token).
 */
function decodeReport(session: TextSession, before: RuntimeStats, after: RuntimeStats): unknown {
  const { mode, kernels, dispatchesPerToken } = session.report().decode;
  const delta = (key: 'queueSubmits' | 'hostAwaits' | 'bytesReadBack'): number => after[key] - before[key];
  return { mode, kernels, dispatchesPerToken: dispatchesPerToken ?? null, queueSubmits: delta('queueSubmits'), hostAwaits: delta('hostAwaits'), bytesReadBack: delta('bytesReadBack') };
}

async function generate(args: GenerateArgs): Promise<void> {
  const file = await openModelFile(args.model);
  let provider: SelectedProvider | undefined;
  let restorePump: (() => void) | undefined;
  try {
    const t0 = performance.now();
    const model = await loadModelFile(file, args.tokenizer);
    let ids: number[];
    let stopTokens: readonly number[] | undefined;
    let renderedPrompt: string | undefined;
    if (args.chat) {
      // Everything but messages and add_generation_prompt (always true for a reply) is a template variable.
      const { messages, add_generation_prompt: _, ...variables } = await chatInput(args);
      // Rendered here first, so a model without a template or a bad input fails before any upload. Encoded
      // as TextSession.chat does (special tokens parsed, BOS unless the template wrote it), so the prompt's
      // length sizes the context.
      renderedPrompt = renderChat(model.tokenizer, { ...variables, messages, add_generation_prompt: true });
      const bos = model.tokenizer.special.bos;
      const templateHasBos = bos !== undefined && renderedPrompt.startsWith(model.tokenizer.tokenText(bos));
      ids = model.tokenizer.encode(renderedPrompt, { bos: model.tokenizer.addBos && !templateHasBos, parseSpecial: true });
      stopTokens = model.endOfGeneration;
    } else {
      ids = model.tokenizer.encode(args.prompt ?? '', { parseSpecial: args.special });
    }
    if (ids.length > Math.min(model.config.contextLength, MAX_SEQ)) {
      throw new TenonError('ENOSPC', `the prompt takes ${ids.length} positions, the context ${Math.min(model.config.contextLength, MAX_SEQ)}`, { op: OP, reason: 'context-full' });
    }
    const plan = contextPlan(ids.length, args.steps, model.config.contextLength);
    const sampling = { maxTokens: plan.maxTokens, temperature: args.temperature, topP: args.topP, seed: args.seed, ...(stopTokens === undefined ? {} : { stopTokens }) };
    provider = await makeProvider(args.provider);
    // Dawn's busy event pump would take a core from a software adapter's own threads (dawn-events.ts).
    if (provider.kind === 'webgpu' && provider.selection.adapter?.software === true) restorePump = paceDawnEvents();
    if (args.verbose) process.stderr.write(`tenon: --provider ${provider.selection.requested}: ${provider.selection.message} (reason ${provider.selection.reason})\n`);
    const runtime = createRuntime(provider);
    const session = await TextSession.create({ runtime, model, maxSeq: plan.maxSeq });
    const loaded = performance.now();
    const generated: number[] = [];
    let text = '';
    let first: number | undefined;
    const before = runtime.stats();
    let decode: unknown;
    try {
      for await (const t of session.generate(ids, sampling)) {
        first ??= performance.now();
        generated.push(t.token);
        text += t.text;
        if (!args.json) out(t.text);
      }
      decode = decodeReport(session, before, runtime.stats());
    } finally {
      session.dispose();
    }
    const done = performance.now();
    const stop: StopReason = generated.length >= args.steps ? 'max-tokens' : generated.length >= plan.maxTokens ? 'context-full' : 'end-of-generation';
    if (args.verbose && stop === 'context-full') process.stderr.write(`tenon: stopped after ${generated.length} tokens: the context holds ${plan.maxSeq} positions\n`);
    if (args.json) {
      const seconds = (done - (first ?? done)) / 1000;
      printJson({
        provider: provider.kind,
        providerSelection: provider.selection,
        adapter: provider.kind === 'webgpu' ? { vendor: provider.adapterInfo.vendor, architecture: provider.adapterInfo.architecture } : null,
        model: { format: model.format, architecture: model.architecture.id, name: model.name ?? null },
        promptIds: ids,
        ...(renderedPrompt === undefined ? {} : { renderedPrompt }),
        generatedIds: generated,
        text,
        stop,
        maxSeq: plan.maxSeq,
        decode,
        eventPump: provider.kind !== 'webgpu' ? null : restorePump === undefined ? 'immediate' : 'paced',
        read: file.stats(),
        loadMs: Math.round(loaded - t0),
        firstTokenMs: first === undefined ? null : Math.round(first - loaded),
        tokensPerSecond: generated.length > 1 && seconds > 0 ? (generated.length - 1) / seconds : null,
      });
    } else out('\n');
  } finally {
    if (provider?.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    restorePump?.();
    await file.close();
  }
}

export async function main(argv: readonly string[]): Promise<number> {
  if (argv.length === 1 && HELP_FLAGS.has(argv[0]!)) {
    out(`${USAGE}\n`);
    return EXIT_OK;
  }
  let args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`tenon: ${err.message}\n${USAGE}\n`);
      return EXIT_USAGE;
    }
    throw err;
  }
  try {
    if (args.command === 'tokenize') await tokenize(args);
    else if (args.command === 'render') await render(args);
    else await generate(args);
    return EXIT_OK;
  } catch (err) {
    const e = isTenonError(err) ? err : new TenonError('EIO', String(err), { op: OP });
    process.stderr.write(`tenon: ${e.code}${e.reason !== undefined ? ` ${e.reason}` : ''}: ${e.message}\n`);
    return EXIT_FAILED;
  }
}
