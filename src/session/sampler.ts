// Next-token choice from logits (llama2.c run.c's sampler semantics): temperature 0 is greedy argmax
// (first maximum on ties); otherwise logits are divided by the temperature, softmaxed, and a token is
// drawn either from the whole distribution or, with 0 < topP < 1, from the smallest set of most likely
// tokens whose probabilities add up to topP. The coin comes from a seeded xorshift* generator, so the
// same seed and logits give the same tokens everywhere. Pure apart from the generator's own state; it
// allocates one scratch index array per sampler. deviceChoice() says when the choice can be made on the
// device instead (greedy: the step graph's argmax; with `deviceSampling`, temperature > 0: the sample op),
// which lets the session pipeline its steps.
// With `deviceSampling` a temperature > 0 draw is the sample op's (src/submit/ops/sample.ts): Philox of
// (seed, the position the token takes), integer weights, top-p by threshold; sample(logits, position) runs
// its host twin, so a step graph's draw on any provider and a draw here from the same logits agree.
import { TenonError } from '../errors.js';
import { sampleRow } from '../submit/index.js';

export interface SamplerOptions {
  /** 0 (default) is greedy. */
  readonly temperature?: number;
  /** Nucleus threshold in (0, 1]; 1 (default) samples from the whole distribution. */
  readonly topP?: number;
  /** Seed of the random generator (default 42). */
  readonly seed?: number;
  /**
   * Draw temperature > 0 tokens with the sample op, counter-based (default false: the xorshift stream):
   * inside the step graph (on the GPU under WebGPU, by the op's host twin on the host provider; the same
   * ids on both for a seed), so sampled generation pipelines like greedy generation.
   */
  readonly deviceSampling?: boolean;
}

const DEFAULT_SEED = 42;

/**
 * How a step's next token can be chosen on the device, by the op that ends a step's graph and writes the
 * chosen id where the next chained step reads it: greedy is the graph's argmax (first maximum on ties,
 * like argmaxOf); `sample` is the sample op with these options, its counter the position of the token.
 */
export type DeviceChoice = { readonly kind: 'argmax' } | { readonly kind: 'sample'; readonly temperature: number; readonly topP: number; readonly seed: number };
const ARGMAX: DeviceChoice = Object.freeze({ kind: 'argmax' });

export function argmaxOf(logits: Float32Array): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  return best;
}

export class Sampler {
  readonly temperature: number;
  readonly topP: number;
  readonly deviceSampling: boolean;
  readonly #seed: number;
  #state: bigint;
  #order: Int32Array | undefined;

  constructor(options: SamplerOptions = {}) {
    const op = 'sampler';
    const temperature = options.temperature ?? 0;
    const topP = options.topP ?? 1;
    const seed = options.seed ?? DEFAULT_SEED;
    if (typeof temperature !== 'number' || !(temperature >= 0) || !Number.isFinite(temperature)) {
      throw new TenonError('EINVAL', 'temperature must be a finite number >= 0', { op, reason: 'bad-temperature' });
    }
    if (typeof topP !== 'number' || !(topP > 0 && topP <= 1)) throw new TenonError('EINVAL', 'topP must be in (0, 1]', { op, reason: 'bad-top-p' });
    if (!Number.isSafeInteger(seed)) throw new TenonError('EINVAL', 'seed must be a safe integer', { op, reason: 'bad-seed' });
    const deviceSampling = options.deviceSampling ?? false;
    if (typeof deviceSampling !== 'boolean') throw new TenonError('EINVAL', 'deviceSampling must be a boolean', { op, reason: 'bad-device-sampling' });
    this.temperature = temperature;
    this.topP = topP;
    this.deviceSampling = deviceSampling;
    this.#seed = seed;
    // A zero state would stay zero forever.
    this.#state = BigInt.asUintN(64, BigInt(seed)) || 1n;
  }

  /** The device-side choice equal to this sampler's, or undefined when the host must draw from the logits. */
  deviceChoice(): DeviceChoice | undefined {
    if (this.temperature === 0) return ARGMAX;
    return this.deviceSampling ? Object.freeze({ kind: 'sample', temperature: this.temperature, topP: this.topP, seed: this.#seed }) : undefined;
  }

  /** A uniform float in [0, 1): xorshift* with run.c's shifts, top 24 bits. */
  #coin(): number {
    let s = this.#state;
    s ^= s >> 12n;
    s ^= BigInt.asUintN(64, s << 25n);
    s ^= s >> 27n;
    this.#state = s;
    const r = BigInt.asUintN(64, s * 0x2545f4914f6cdd1dn) >> 32n;
    return Number(r >> 8n) / 16777216;
  }

  /**
   * Chooses the next token. `logits` is not modified. `position` (the position the token takes) is the
   * counter of a deviceSampling draw; the xorshift stream ignores it.
   */
  sample(logits: Float32Array, position = 0): number {
    if (this.temperature === 0) return argmaxOf(logits);
    if (this.deviceSampling) return sampleRow(logits, { temperature: this.temperature, topP: this.topP, seed: this.#seed, step: position });
    const n = logits.length;
    const probs = new Float64Array(n);
    let max = -Infinity;
    for (let i = 0; i < n; i++) max = Math.max(max, logits[i]! / this.temperature);
    let sum = 0;
    for (let i = 0; i < n; i++) sum += probs[i] = Math.exp(logits[i]! / this.temperature - max);
    for (let i = 0; i < n; i++) probs[i]! /= sum;
    const coin = this.#coin();
    if (this.topP >= 1) {
      let cdf = 0;
      for (let i = 0; i < n; i++) {
        cdf += probs[i]!;
        if (coin < cdf) return i;
      }
      return n - 1;
    }
    const order = (this.#order ??= new Int32Array(n));
    for (let i = 0; i < n; i++) order[i] = i;
    order.sort((a, b) => probs[b]! - probs[a]! || a - b);
    let kept = 0;
    let mass = 0;
    while (kept < n) {
      mass += probs[order[kept]!]!;
      kept++;
      if (mass > this.topP) break;
    }
    const target = coin * mass;
    let cdf = 0;
    for (let i = 0; i < kept; i++) {
      cdf += probs[order[i]!]!;
      if (target < cdf) return order[i]!;
    }
    return order[kept - 1]!;
  }
}
