// A greedy decode traced bit for bit, for suites that compare two ways of running the same forward pass
// (resident vs bounded residency): the prompt, then `steps` greedy tokens, keeping every step's logits as
// their IEEE-754 bit patterns (copies: the forward's logits buffer is reused) and the chosen ids.
import type { LlamaForward } from '../../src/index.js';

/** The bit patterns of `a` (a view, not a copy). */
export function bits(a: Float32Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length);
}

export interface GreedyTrace {
  readonly logits: Uint32Array[];
  readonly ids: number[];
}

/** Runs `prompt` at position 0, then `steps` greedy tokens; `check` runs after every run. */
export async function greedyTrace(forward: LlamaForward, prompt: readonly number[], steps: number, check: () => void): Promise<GreedyTrace> {
  const logits: Uint32Array[] = [];
  const ids: number[] = [];
  let r = await forward.run(prompt, 0);
  check();
  logits.push(bits(r.logits).slice());
  for (let s = 0; s < steps; s++) {
    ids.push(r.argmax);
    r = await forward.run([r.argmax], prompt.length + s);
    check();
    logits.push(bits(r.logits).slice());
  }
  return { logits, ids };
}
