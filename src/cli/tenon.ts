// `tenon` command-line interface (Node): runs a llama2.c model on Dawn (WebGPU) or the host provider.
//   tenon generate --model FILE --tokenizer FILE --prompt TEXT --steps N [--temperature T] [--top-p P]
//                  [--seed S] [--provider webgpu|host] [--json]
//   tenon --help
// Text mode streams the generated text to stdout; --json prints one object with the prompt ids, the
// generated ids, the text, the provider and timings. --help prints the usage to stdout and exits 0. Errors
// print `tenon: CODE reason: message` to stderr and exit 1 (2 for usage errors). Dawn comes from the
// `webgpu` package, loaded only for --provider webgpu (without it that provider fails with ENOTSUP,
// reason webgpu-package-missing); XDG_RUNTIME_DIR gets a private default first (runtime-dir.ts). Uses
// only the public API.
import { readFile } from 'node:fs/promises';
import { TenonError, TextSession, createHostProvider, createRuntime, createWebGPUProvider, isTenonError, parseLlamaModel, parseTokenizer } from '../index.js';
import type { HostProvider, WebGPUProvider } from '../index.js';
import { ensureRuntimeDir } from './runtime-dir.js';

const USAGE = `usage: tenon generate --model FILE --tokenizer FILE --prompt TEXT --steps N
                      [--temperature T] [--top-p P] [--seed S] [--provider webgpu|host] [--json]
       tenon --help`;

interface Args {
  model: string;
  tokenizer: string;
  prompt: string;
  steps: number;
  temperature: number;
  topP: number;
  seed: number;
  provider: 'webgpu' | 'host';
  json: boolean;
}

class UsageError extends Error {}

const HELP_FLAGS = new Set(['--help', '-h', 'help']);

/** Exit statuses: success, a failed run (coded error), bad usage. */
const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

function parseArgs(argv: readonly string[]): Args {
  const [command, ...rest] = argv;
  if (command !== 'generate') throw new UsageError(command === undefined ? 'missing command' : `unknown command ${command}`);
  const values = new Map<string, string>();
  let json = false;
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i]!;
    if (flag === '--json') {
      json = true;
      continue;
    }
    if (!flag.startsWith('--') || i + 1 >= rest.length) throw new UsageError(`bad argument ${flag}`);
    values.set(flag.slice(2), rest[++i]!);
  }
  const known = new Set(['model', 'tokenizer', 'prompt', 'steps', 'temperature', 'top-p', 'seed', 'provider']);
  for (const key of values.keys()) if (!known.has(key)) throw new UsageError(`unknown option --${key}`);
  const need = (key: string): string => {
    const v = values.get(key);
    if (v === undefined) throw new UsageError(`--${key} is required`);
    return v;
  };
  const number = (key: string, fallback: number): number => {
    const v = values.get(key);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new UsageError(`--${key} must be a number`);
    return n;
  };
  const provider = values.get('provider') ?? 'webgpu';
  if (provider !== 'webgpu' && provider !== 'host') throw new UsageError('--provider must be webgpu or host');
  const steps = number('steps', NaN);
  if (!Number.isSafeInteger(steps) || steps < 0) throw new UsageError('--steps must be a non-negative integer');
  return {
    model: need('model'),
    tokenizer: need('tokenizer'),
    prompt: need('prompt'),
    steps,
    temperature: number('temperature', 0),
    topP: number('top-p', 1),
    seed: number('seed', 42),
    provider,
    json,
  };
}

async function makeProvider(kind: 'webgpu' | 'host'): Promise<HostProvider | WebGPUProvider> {
  if (kind === 'host') return createHostProvider();
  ensureRuntimeDir();
  const webgpu = await import('webgpu').catch((err: unknown) => {
    if ((err as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new TenonError('ENOTSUP', 'the webgpu provider needs the `webgpu` package (npm install webgpu), or use --provider host', {
      op: 'cli',
      reason: 'webgpu-package-missing',
      cause: err,
    });
  });
  Object.assign(globalThis, webgpu.globals);
  return createWebGPUProvider({ gpu: webgpu.create([]) });
}

export async function main(argv: readonly string[]): Promise<number> {
  if (argv.length === 1 && HELP_FLAGS.has(argv[0]!)) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT_OK;
  }
  let args: Args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`tenon: ${err.message}\n${USAGE}\n`);
      return EXIT_USAGE;
    }
    throw err;
  }
  let provider: HostProvider | WebGPUProvider | undefined;
  try {
    const t0 = performance.now();
    const [modelBytes, tokBytes] = await Promise.all([readFile(args.model), readFile(args.tokenizer)]);
    const model = parseLlamaModel(modelBytes);
    const tokenizer = parseTokenizer(tokBytes, model.config.vocabSize);
    provider = await makeProvider(args.provider);
    const session = await TextSession.create({ runtime: createRuntime(provider), model, tokenizer, maxSeq: Math.min(model.config.seqLen, 4096) });
    const promptIds = tokenizer.encode(args.prompt, { bos: true });
    const loaded = performance.now();
    const generated: number[] = [];
    let text = '';
    let first: number | undefined;
    for await (const t of session.generate(promptIds, { maxTokens: args.steps, temperature: args.temperature, topP: args.topP, seed: args.seed })) {
      first ??= performance.now();
      generated.push(t.token);
      text += t.text;
      if (!args.json) process.stdout.write(t.text);
    }
    const done = performance.now();
    if (args.json) {
      const seconds = (done - (first ?? done)) / 1000;
      process.stdout.write(
        `${JSON.stringify({
          provider: args.provider,
          adapter: provider.kind === 'webgpu' ? { vendor: provider.adapterInfo.vendor, architecture: provider.adapterInfo.architecture } : null,
          promptIds,
          generatedIds: generated,
          text,
          loadMs: Math.round(loaded - t0),
          firstTokenMs: first === undefined ? null : Math.round(first - loaded),
          tokensPerSecond: generated.length > 1 && seconds > 0 ? (generated.length - 1) / seconds : null,
        })}\n`,
      );
    } else {
      process.stdout.write('\n');
    }
    session.dispose();
    return EXIT_OK;
  } catch (err) {
    const e = isTenonError(err) ? err : new TenonError('EIO', String(err), { op: 'cli' });
    process.stderr.write(`tenon: ${e.code}${e.reason !== undefined ? ` ${e.reason}` : ''}: ${e.message}\n`);
    return EXIT_FAILED;
  } finally {
    if (provider?.kind === 'webgpu') (provider as WebGPUProvider).destroy();
  }
}
