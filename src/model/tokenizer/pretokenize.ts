// Pre-tokenizers of byte-level BPE vocabularies, chosen by `tokenizer.ggml.pre` (the names llama.cpp's
// converter writes). A pre-tokenizer is a list of regular-expression stages: each stage splits every piece
// the previous stage produced into its matches AND the unmatched text between them (nothing is dropped),
// and BPE merges never cross a piece boundary.
//
// The expressions are the published splitting rules of each model family written for JavaScript: the `u`
// flag, `\p{L}` letters, `\p{N}` numbers, and `\p{White_Space}` where the originals say `\s` (JavaScript's
// `\s` differs from Unicode White_Space: it adds U+FEFF and lacks U+0085). The case-insensitive contraction
// group `(?i:'s|'t|...)` is spelled out letter by letter, since JavaScript has no inline flags.
import { TenonError } from '../../errors.js';

export interface PreTokenizer {
  /** The name as the vocabulary gives it. */
  readonly name: string;
  readonly stages: readonly RegExp[];
  /** A pre-token that is itself a token is emitted as that token without merging (Llama 3 rule). */
  readonly ignoreMerges: boolean;
  /** add_bos_token's default when the vocabulary does not say. */
  readonly addBosDefault: boolean;
}

/** Llama 3: contractions, letter runs with one leading non-letter, numbers in groups of at most three. */
const LLAMA3 =
  /(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\p{White_Space}\p{L}\p{N}]+[\r\n]*|\p{White_Space}*[\r\n]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+/gu;

/** Qwen2: as Llama 3, but every digit is its own pre-token. */
const QWEN2 =
  /(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\p{White_Space}\p{L}\p{N}]+[\r\n]*|\p{White_Space}*[\r\n]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+/gu;

/** GPT-2: lower-case contractions, then letters, numbers or other symbols each with one optional leading space. */
const GPT2 = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})/gu;

/** SmolLM (and StarCoder-style vocabularies): every digit apart first, then the GPT-2 rule. */
const SINGLE_DIGIT = /\p{N}/gu;

const LLAMA3_SPEC = { stages: [LLAMA3], ignoreMerges: true, addBosDefault: true };
const GPT2_SPEC = { stages: [GPT2], ignoreMerges: false, addBosDefault: false };
const TABLE: ReadonlyMap<string, Omit<PreTokenizer, 'name'>> = new Map([
  ['llama-bpe', LLAMA3_SPEC],
  ['llama3', LLAMA3_SPEC],
  ['llama-v3', LLAMA3_SPEC],
  ['qwen2', { stages: [QWEN2], ignoreMerges: false, addBosDefault: false }],
  ['smollm', { stages: [SINGLE_DIGIT, GPT2], ignoreMerges: false, addBosDefault: false }],
  ['gpt-2', GPT2_SPEC],
  ['gpt2', GPT2_SPEC],
]);

/** The names this build knows. */
export const PRE_TOKENIZER_NAMES: readonly string[] = [...TABLE.keys()];

/** The pre-tokenizer named `name`; ENOTSUP 'unsupported-pre-tokenizer' naming it otherwise. */
export function preTokenizer(name: string | undefined, op: string): PreTokenizer {
  const spec = name === undefined ? undefined : TABLE.get(name);
  if (spec === undefined) {
    throw new TenonError('ENOTSUP', `pre-tokenizer ${name === undefined ? '(none given)' : JSON.stringify(name)} is not supported (known: ${PRE_TOKENIZER_NAMES.join(', ')})`, {
      op,
      reason: 'unsupported-pre-tokenizer',
      ids: { pre: name ?? '(none)' },
    });
  }
  return { name: name!, ...spec };
}

/** Appends the pre-tokens of `text` to `out`, stage by stage. */
export function preTokenize(pre: PreTokenizer, text: string, out: string[]): void {
  let pieces = [text];
  for (let s = 0; s < pre.stages.length; s++) {
    const last = s === pre.stages.length - 1;
    const next: string[] = last ? out : [];
    for (const piece of pieces) splitKeepingGaps(pre.stages[s]!, piece, next);
    pieces = next;
  }
}

function splitKeepingGaps(re: RegExp, text: string, out: string[]): void {
  re.lastIndex = 0;
  let done = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m.index > done) out.push(text.slice(done, m.index));
    out.push(m[0]);
    done = m.index + m[0].length;
  }
  if (done < text.length) out.push(text.slice(done));
}
