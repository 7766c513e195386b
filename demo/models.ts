// The demo's model picker: what each choice loads. Type-only data, read by the page (main.ts).
// `embedded` ships inside the demo (public/embedded/, MIT, see its LICENSE) and works offline; the others
// are public files fetched once into OPFS by URL (Hugging Face `resolve/main` links to the official or
// well-known GGUF repositories; sizes are approximate, the page shows the real ones while downloading).
// A llama2.c checkpoint needs its tokenizer file; a GGUF file carries its own vocabulary and chat template.

export interface ModelChoice {
  readonly id: string;
  readonly label: string;
  /** The model file: a URL relative to the demo page, or absolute. */
  readonly model: string;
  /** llama2.c checkpoints only: the tokenizer file. */
  readonly tokenizer?: string;
  /** What the user is told before loading. */
  readonly note: string;
}

export const EMBEDDED_MODEL = 'stories260k';
/** The picker entry that means "the URL or file in the fields below". */
export const CUSTOM_MODEL = 'custom';

export const MODEL_CHOICES: readonly ModelChoice[] = [
  {
    id: EMBEDDED_MODEL,
    label: 'stories260K (llama2.c, embedded, 1 MB)',
    model: './embedded/stories260K.bin',
    tokenizer: './embedded/tok512.bin',
    note: 'Ships with the demo (MIT, Andrej Karpathy\'s tinyllamas): works offline. Tells tiny stories; no chat template.',
  },
  {
    id: 'stories15m',
    label: 'stories15M (llama2.c, 58 MiB)',
    model: 'https://huggingface.co/karpathy/tinyllamas/resolve/main/stories15M.bin',
    tokenizer: 'https://raw.githubusercontent.com/karpathy/llama2.c/master/tokenizer.bin',
    note: 'Andrej Karpathy\'s tinyllamas stories15M with llama2.c\'s 32000-token tokenizer; no chat template.',
  },
  {
    id: 'smollm2-360m-q8_0',
    label: 'SmolLM2-360M-Instruct Q8_0 (GGUF, about 390 MB)',
    model: 'https://huggingface.co/HuggingFaceTB/SmolLM2-360M-Instruct-GGUF/resolve/main/smollm2-360m-instruct-q8_0.gguf',
    note: 'Hugging Face\'s SmolLM2 360M instruct model (Apache-2.0), 8-bit weights; chat.',
  },
  {
    id: 'qwen2.5-0.5b-q4_k_m',
    label: 'Qwen2.5-0.5B-Instruct Q4_K_M (GGUF, about 0.4-0.5 GB)',
    model: 'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf',
    note: 'Qwen\'s 0.5B instruct model (Apache-2.0), Q4_K/Q6_K weights; chat.',
  },
  {
    id: 'llama3.2-1b-q4_k_m',
    label: 'Llama-3.2-1B-Instruct Q4_K_M (GGUF, about 810 MB)',
    model: 'https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_K_M.gguf',
    note: 'Meta\'s Llama 3.2 1B instruct model (Llama 3.2 Community License), Q4_K/Q6_K weights; chat.',
  },
];

export function modelChoice(id: string): ModelChoice | undefined {
  return MODEL_CHOICES.find((c) => c.id === id);
}
