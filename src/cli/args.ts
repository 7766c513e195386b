// Command-line parsing for the `tenon` CLI (tenon.ts). Pure: no I/O. Each subcommand lists its options;
// `parseArgs` returns the subcommand with its options checked (required ones present, numbers numeric,
// enums known) or throws UsageError, which the CLI prints with the usage text and exit status 2.
// Options are `--name VALUE` or boolean switches (`--json`); an option given twice keeps the last value.

export const USAGE = `usage: tenon generate --model FILE [--tokenizer FILE] (--prompt TEXT | --chat (--prompt TEXT | --input FILE))
                      [--system TEXT] [--steps N] [--temperature T] [--top-p P] [--seed S] [--special]
                      [--provider auto|webgpu|host] [--verbose] [--json]
       tenon tokenize --model FILE [--tokenizer FILE] --text TEXT [--special] [--no-bos] [--json]
       tenon render --model FILE [--tokenizer FILE] --input FILE [--json]
       tenon --help
MODEL is a GGUF file or a llama2.c checkpoint (which needs --tokenizer). --chat renders the model's chat
template around the prompt (a user message) or around the messages of --input, a JSON file holding
{ messages, add_generation_prompt, ...other template variables } as apply_chat_template takes them.
--special recognises special-token texts (<|im_start|>, ...) in the prompt or text.
--provider auto (the default) runs WebGPU on a hardware adapter and the host provider on a software one
(SwiftShader, llvmpipe, ...) or without WebGPU; --json reports the choice and its reason, --verbose prints it
to stderr.`;

export class UsageError extends Error {}

export type ProviderKind = 'auto' | 'webgpu' | 'host';

export interface ModelArgs {
  readonly model: string;
  readonly tokenizer: string | undefined;
  readonly json: boolean;
}

export interface GenerateArgs extends ModelArgs {
  readonly command: 'generate';
  readonly prompt: string | undefined;
  readonly input: string | undefined;
  readonly system: string | undefined;
  readonly chat: boolean;
  readonly special: boolean;
  readonly steps: number;
  readonly temperature: number;
  readonly topP: number;
  readonly seed: number;
  readonly provider: ProviderKind;
  /** Print the provider choice and its reason to stderr. */
  readonly verbose: boolean;
}

export interface TokenizeArgs extends ModelArgs {
  readonly command: 'tokenize';
  readonly text: string;
  readonly special: boolean;
  readonly bos: boolean | undefined;
}

export interface RenderArgs extends ModelArgs {
  readonly command: 'render';
  readonly input: string;
}

export type Args = GenerateArgs | TokenizeArgs | RenderArgs;

/** Tokens generated when --steps is not given. */
export const DEFAULT_STEPS = 64;
/** Sampling defaults: greedy, no nucleus cut, a fixed seed (reproducible runs). */
const DEFAULT_TEMPERATURE = 0;
const DEFAULT_TOP_P = 1;
const DEFAULT_SEED = 42;

/** Options that take a value, and switches, per subcommand. */
const OPTIONS = {
  generate: { values: ['model', 'tokenizer', 'prompt', 'input', 'system', 'steps', 'temperature', 'top-p', 'seed', 'provider'], switches: ['json', 'chat', 'special', 'verbose'] },
  tokenize: { values: ['model', 'tokenizer', 'text'], switches: ['json', 'special', 'no-bos'] },
  render: { values: ['model', 'tokenizer', 'input'], switches: ['json'] },
} as const;

type Command = keyof typeof OPTIONS;

function isCommand(name: string | undefined): name is Command {
  return name !== undefined && Object.hasOwn(OPTIONS, name);
}

export function parseArgs(argv: readonly string[]): Args {
  const [command, ...rest] = argv;
  if (!isCommand(command)) throw new UsageError(command === undefined ? 'missing command' : `unknown command ${command}`);
  const spec = OPTIONS[command];
  const values = new Map<string, string>();
  const switches = new Set<string>();
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i]!;
    if (!flag.startsWith('--')) throw new UsageError(`bad argument ${flag}`);
    const name = flag.slice(2);
    if ((spec.switches as readonly string[]).includes(name)) {
      switches.add(name);
      continue;
    }
    if (!(spec.values as readonly string[]).includes(name)) throw new UsageError(`unknown option --${name} for ${command}`);
    if (i + 1 >= rest.length) throw new UsageError(`--${name} needs a value`);
    values.set(name, rest[++i]!);
  }
  const need = (key: string): string => {
    const v = values.get(key);
    if (v === undefined) throw new UsageError(`--${key} is required`);
    return v;
  };
  const number = (key: string, fallback: number): number => {
    const v = values.get(key);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${key} must be a number`);
    return n;
  };
  const common: ModelArgs = { model: need('model'), tokenizer: values.get('tokenizer'), json: switches.has('json') };

  if (command === 'tokenize') {
    return { ...common, command, text: need('text'), special: switches.has('special'), bos: switches.has('no-bos') ? false : undefined };
  }
  if (command === 'render') return { ...common, command, input: need('input') };

  const chat = switches.has('chat');
  const prompt = values.get('prompt');
  const input = values.get('input');
  if (!chat && input !== undefined) throw new UsageError('--input needs --chat');
  if (!chat && values.has('system')) throw new UsageError('--system needs --chat');
  if (prompt === undefined && input === undefined) throw new UsageError(chat ? '--chat needs --prompt or --input' : '--prompt is required');
  if (prompt !== undefined && input !== undefined) throw new UsageError('give --prompt or --input, not both');
  const provider = values.get('provider') ?? 'auto';
  if (provider !== 'auto' && provider !== 'webgpu' && provider !== 'host') throw new UsageError('--provider must be auto, webgpu or host');
  const steps = number('steps', DEFAULT_STEPS);
  if (!Number.isSafeInteger(steps) || steps < 0) throw new UsageError('--steps must be a non-negative integer');
  return {
    ...common,
    command,
    prompt,
    input,
    system: values.get('system'),
    chat,
    special: switches.has('special'),
    steps,
    temperature: number('temperature', DEFAULT_TEMPERATURE),
    topP: number('top-p', DEFAULT_TOP_P),
    seed: number('seed', DEFAULT_SEED),
    provider,
    verbose: switches.has('verbose'),
  };
}
