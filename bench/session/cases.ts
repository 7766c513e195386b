// The cases of the inference-session benchmark (issue 5, acceptance point 6), shared by the Node part
// (host provider and Dawn) and the Chromium part (WebGPU in the page, host provider over shared memory,
// prompt caches on OPFS); no node:* imports here. Every case returns SessionRecords: two measured sides,
// their time ratio, and the figures the case is about. Cases check what they compare (same greedy ids,
// same first token) and throw when that fails; nothing here asserts anything about time.
//   1 decodeCase       greedy decode tokens/s, host provider vs WebGPU, in one lane
//   2 ttftCase         time to first token of a ~400-token prompt, fresh prefill vs a loaded prompt cache
//   3 speculativeCase  prompt-lookup speculative vs plain greedy generation on a repetitive prompt
//   4 rollbackCase     checkpoint and rollback of 4 tokens at 16 and at 400 committed tokens
//   4 zeroingCase      (WebGPU, attribution) what a rollback does to the caches, at stories260K and at
//                      stories110M cache sizes: a host mapping of every cache vs a write of the rows only
import { TextSession, createAllocationGroup, createRuntime, decodePromptCache, parseLlamaModel, parseTokenizer, readBlob, zeros } from '../../src/index.js';
import type { DescriptorSlot, HostProvider, LlamaModelFile, Runtime, Session as PlaneSession, Tokenizer, WebGPUProvider } from '../../src/index.js';
import { median } from '../submit/measure.js';

/** Every session of the benchmark holds the model's whole context (stories260K: 512 positions). */
export const MAX_SEQ = 512;
/** Prefill chunk: TextSession's default (llama.ts DEFAULT_MAX_BATCH). */
export const MAX_BATCH = 64;
/** Point 1: greedy decode steps timed after the prompt. */
export const DECODE_STEPS = 200;
export const DECODE_PROMPT = 'Once upon a time';
/** models/README.md: the greedy continuation of DECODE_PROMPT starts with these ids on every provider. */
export const KNOWN_GREEDY = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
/** Point 2: the long prompt, and the prefix its prompt cache holds (the rest is prefilled after a load). */
export const LONG_PROMPT_TOKENS = 400;
export const CACHED_PREFIX_TOKENS = 390;
/** Point 3: tokens generated per run, and the prompt-lookup settings. */
export const SPECULATIVE_TOKENS = 96;
export const SPECULATIVE = { lookahead: 4, ngram: 2 } as const;
/** Point 4: committed depths, and how many tokens are stepped then rolled back at each. */
export const ROLLBACK_DEPTHS = [16, 400] as const;
export const ROLLBACK_TOKENS = 4;
/** Point 4 detail: a session with a small context, to tell depth apart from cache capacity. */
export const SMALL_MAX_SEQ = 64;
/** checkpoint() is a few hundred nanoseconds: it is timed over this many calls per round. */
export const CHECKPOINT_CALLS = 2000;

/** Recorded with the results. */
export const SETTINGS = {
  maxSeq: MAX_SEQ,
  maxBatch: MAX_BATCH,
  decode: { prompt: DECODE_PROMPT, steps: DECODE_STEPS },
  ttft: { promptTokens: LONG_PROMPT_TOKENS, cachedPrefixTokens: CACHED_PREFIX_TOKENS },
  speculative: { tokens: SPECULATIVE_TOKENS, ...SPECULATIVE },
  rollback: { depths: ROLLBACK_DEPTHS, tokens: ROLLBACK_TOKENS, smallMaxSeq: SMALL_MAX_SEQ, checkpointCallsPerRound: CHECKPOINT_CALLS },
} as const;

/**
 * A TinyStories-style text (the model's own domain) long enough to encode to more than
 * LONG_PROMPT_TOKENS ids with tok512; the long prompt is its first LONG_PROMPT_TOKENS ids.
 */
export const LONG_TEXT = [
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her mom.',
  'One day, Lily saw a big red ball under a tree. She ran to the ball and picked it up. It was shiny and round.',
  '"Mom, look at my ball!" Lily said. Her mom smiled and said, "That is a very nice ball, Lily. Do you want to play with it?"',
  'Lily nodded and threw the ball high in the sky. It came down and bounced on the grass. A small dog saw the ball and ran to it.',
  'The dog was brown and white and had a long tail. He wagged his tail and barked at Lily. Lily was a little scared, but she was brave.',
  '"Hello, dog," she said. "Do you want to play with me?" The dog barked again and pushed the ball to Lily with his nose.',
  'Lily laughed and threw the ball for the dog. The dog ran fast and brought the ball back. They played all afternoon in the warm sun.',
  'When it was time to go home, Lily gave the dog a big hug. "Thank you for playing with me," she said. The dog licked her face.',
  'At home, Lily told her dad about the dog and the red ball. Her dad listened and smiled. "It sounds like you made a new friend," he said.',
  'That night, Lily went to bed with a happy heart. She dreamed about the park, the sun, the red ball and her new friend, the dog.',
  'The next morning, Lily woke up early. She ate her breakfast and asked her mom if they could go to the park again.',
  'Her mom said yes, and they walked to the park together. Lily looked for the dog under the big tree, and there he was, waiting for her.',
].join(' ');

/** Point 3: a prompt that repeats itself, so prompt lookup finds n-gram matches in the context. */
export const REPETITIVE_TEXT = Array.from({ length: 6 }, () => 'Tom has a red ball. Tom likes to play with the ball.').join(' ');

export type Lane = 'node' | 'chromium';
export type ProviderName = 'host' | 'host-shared' | 'webgpu-dawn' | 'webgpu-chromium';

/** One provider of a lane, with its runtime and the parsed fixtures. */
export interface BenchTarget {
  readonly lane: Lane;
  readonly provider: ProviderName;
  readonly runtime: Runtime;
  readonly model: LlamaModelFile;
  readonly tokenizer: Tokenizer;
}

export function makeTarget(lane: Lane, provider: ProviderName, gpuOrHost: HostProvider | WebGPUProvider, modelBytes: Uint8Array, tokBytes: Uint8Array): BenchTarget {
  const model = parseLlamaModel(modelBytes);
  const tokenizer = parseTokenizer(tokBytes, model.config.vocabSize);
  return { lane, provider, runtime: createRuntime(gpuOrHost), model, tokenizer };
}

export function openSession(t: BenchTarget, maxSeq = MAX_SEQ): Promise<TextSession> {
  return TextSession.create({ runtime: t.runtime, model: t.model, tokenizer: t.tokenizer, maxSeq, maxBatch: MAX_BATCH });
}

/** Timing of one measured side: median, fastest and slowest round, in ms. */
export interface Figure {
  readonly name: string;
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly rounds: number;
}

/** One row of bench/results/session.json. */
export interface SessionRecord {
  /** Acceptance point 6 item: 1 decode, 2 time to first token, 3 speculative, 4 checkpoint/rollback. */
  readonly point: 1 | 2 | 3 | 4;
  readonly lane: Lane;
  /** The provider(s) the sides ran on ('host vs webgpu-dawn' for point 1). */
  readonly provider: string;
  readonly case: string;
  /** 'headline' rows answer the acceptance point; 'detail' rows attribute or give context. */
  readonly role: 'headline' | 'detail';
  readonly baseline: Figure;
  readonly candidate: Figure;
  /** candidate median time / baseline median time (below 1: the candidate is faster). */
  readonly ratio: number;
  /** The same over the fastest rounds (leaves out stalls; map latency on WebGPU is bimodal here). */
  readonly minRatio: number;
  /** The case's own figures (tokens/s, speculation stats, bytes, agreement checks). */
  readonly figures: Readonly<Record<string, number | string | boolean | readonly number[]>>;
  readonly note?: string;
}

interface Side<T> {
  readonly name: string;
  /** Untimed preparation before each timed call (reset, prefill, a step to roll back). */
  setup?(): Promise<void>;
  /** The timed call. */
  run(): Promise<T>;
}

/**
 * Times sides interleaved (their order rotating each round, so drift hits all of them): `warmup` untimed
 * rounds first, then `rounds` timed calls each. Returns per side its figure and the last call's value.
 */
async function interleaved<T>(sides: readonly Side<T>[], rounds: number, warmup: number): Promise<{ figures: Figure[]; last: T[] }> {
  const samples = sides.map(() => [] as number[]);
  const last: T[] = [];
  for (let r = 0; r < warmup + rounds; r++) {
    for (let j = 0; j < sides.length; j++) {
      const at = (j + r) % sides.length;
      const side = sides[at]!;
      await side.setup?.();
      const t0 = performance.now();
      last[at] = await side.run();
      const dt = performance.now() - t0;
      if (r >= warmup) samples[at]!.push(dt);
    }
  }
  return { figures: sides.map((s, i) => figure(s.name, samples[i]!)), last };
}

function figure(name: string, ms: readonly number[]): Figure {
  return { name, medianMs: median(ms), minMs: Math.min(...ms), maxMs: Math.max(...ms), rounds: ms.length };
}

function recordOf(input: Omit<SessionRecord, 'ratio' | 'minRatio' | 'role'> & { role?: SessionRecord['role'] }): SessionRecord {
  const { baseline, candidate } = input;
  return { ...input, role: input.role ?? 'headline', ratio: candidate.medianMs / baseline.medianMs, minRatio: candidate.minMs / baseline.minMs };
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

/** The first LONG_PROMPT_TOKENS ids of LONG_TEXT (BOS first). */
export function longPrompt(tokenizer: Tokenizer): number[] {
  const ids = tokenizer.encode(LONG_TEXT, { bos: true });
  if (ids.length < LONG_PROMPT_TOKENS) throw new Error(`LONG_TEXT encodes to ${ids.length} ids, fewer than ${LONG_PROMPT_TOKENS}`);
  return ids.slice(0, LONG_PROMPT_TOKENS);
}

/** Greedy ids of DECODE_STEPS decode steps: `first` (the prefill's choice), then each step's choice. */
async function greedyDecode(s: TextSession, first: number): Promise<number[]> {
  const ids = [first];
  let next = first;
  for (let i = 0; i < DECODE_STEPS; i++) {
    next = (await s.decode(next)).argmax;
    ids.push(next);
  }
  return ids;
}

/**
 * Point 1: DECODE_STEPS greedy decode steps after DECODE_PROMPT on the host provider and on WebGPU of the
 * same lane, interleaved. Each round resets and prefills the prompt untimed; the timed part is the decode
 * loop alone (one transaction per token: submit, proven completion, logits read back). Both providers
 * must produce the known greedy start; how far their 200 ids agree is recorded.
 */
export async function decodeCase(host: BenchTarget, gpu: BenchTarget, rounds = 5, warmup = 1): Promise<SessionRecord> {
  const prompt = host.tokenizer.encode(DECODE_PROMPT, { bos: true });
  const sessions = [await openSession(host), await openSession(gpu)];
  const firsts: number[] = [0, 0];
  const sides = sessions.map((s, i): Side<number[]> => ({
    name: `${[host, gpu][i]!.provider}: ${DECODE_STEPS} greedy decode steps`,
    setup: async () => {
      await s.reset();
      firsts[i] = (await s.prefill(prompt)).argmax;
    },
    run: () => greedyDecode(s, firsts[i]!),
  }));
  const { figures, last } = await interleaved(sides, rounds, warmup);
  for (const s of sessions) s.dispose();
  const [hostIds, gpuIds] = last as [number[], number[]];
  for (const [name, ids] of [[host.provider, hostIds], [gpu.provider, gpuIds]] as const) {
    if (!sameIds(ids.slice(0, KNOWN_GREEDY.length), KNOWN_GREEDY)) throw new Error(`${name}: greedy ids start ${ids.slice(0, 10).join(',')}, not the known ${KNOWN_GREEDY.join(',')}`);
  }
  let agree = 0;
  while (agree < hostIds.length && hostIds[agree] === gpuIds[agree]) agree++;
  const tokPerS = (f: Figure) => (DECODE_STEPS * 1000) / f.medianMs;
  return recordOf({
    point: 1,
    lane: host.lane,
    provider: `${host.provider} vs ${gpu.provider}`,
    case: `decode ${DECODE_STEPS} greedy tokens after "${DECODE_PROMPT}"`,
    baseline: figures[0]!,
    candidate: figures[1]!,
    figures: {
      [`${host.provider} tok/s`]: tokPerS(figures[0]!),
      [`${gpu.provider} tok/s`]: tokPerS(figures[1]!),
      [`${host.provider} ms/token`]: figures[0]!.medianMs / DECODE_STEPS,
      [`${gpu.provider} ms/token`]: figures[1]!.medianMs / DECODE_STEPS,
      [`greedy ids agree (of ${DECODE_STEPS + 1})`]: agree,
    },
  });
}

/**
 * Point 2 (needs the data plane, so the Chromium lane): time to first token for the LONG_PROMPT_TOKENS
 * prompt. Fresh: prefill of the whole prompt (chunks of MAX_BATCH) and its greedy choice. Cached:
 * loadPromptCache of a cache holding the first CACHED_PREFIX_TOKENS (read from OPFS, digest and identity
 * checked, KV rows imported), prefill of the rest, greedy choice. Both sessions exist and are reset
 * untimed before each call; the model is loaded in both. Both must choose the same first token.
 */
export async function ttftCase(t: BenchTarget, store: PlaneSession, rounds = 7, warmup = 1): Promise<SessionRecord[]> {
  const ids = longPrompt(t.tokenizer);
  const path = `/bench/session/${t.provider}.cache`;
  const maker = await openSession(t);
  await maker.prefill(ids.slice(0, CACHED_PREFIX_TOKENS));
  const t0 = performance.now();
  await maker.savePromptCache(store, path);
  const saveMs = performance.now() - t0;
  maker.dispose();
  const info = await store.stat(path);
  const blobBytes = info.kind === 'blob' ? info.length : -1;
  const fresh = await openSession(t);
  const cached = await openSession(t);
  const loadMs: number[] = [];
  const restMs: number[] = [];
  let freshLogits: Float32Array = new Float32Array(0);
  let cachedLogits: Float32Array = new Float32Array(0);
  const { figures, last } = await interleaved<number>(
    [
      {
        name: `fresh prefill ${LONG_PROMPT_TOKENS} + first token`,
        setup: () => fresh.reset(),
        run: async () => {
          const r = await fresh.prefill(ids);
          freshLogits = r.logits;
          return r.argmax;
        },
      },
      {
        name: `load cache (${CACHED_PREFIX_TOKENS}) + prefill ${LONG_PROMPT_TOKENS - CACHED_PREFIX_TOKENS} + first token`,
        setup: () => cached.reset(),
        run: async () => {
          const a = performance.now();
          const m = await cached.loadPromptCache(store, path, { prompt: ids });
          const b = performance.now();
          const r = await cached.prefill(ids.slice(m.tokens.length));
          loadMs.push(b - a);
          restMs.push(performance.now() - b);
          cachedLogits = r.logits;
          return r.argmax;
        },
      },
    ],
    rounds,
    warmup,
  );
  // Where a load's time goes: the blob read from OPFS, digest + checks, the KV rows into the caches.
  const id = await cached.identity();
  const c = t.model.config;
  let bytes = await readBlob(store, path);
  let decoded = await decodePromptCache(bytes, { modelId: id.modelId, tokenizerId: id.tokenizerId, layers: c.nLayers, kvDim: c.kvDim, maxSeq: MAX_SEQ });
  const parts = await interleaved<number>(
    [
      { name: 'readBlob', run: async () => (bytes = await readBlob(store, path)).byteLength },
      {
        name: 'decodePromptCache',
        run: async () => {
          decoded = await decodePromptCache(bytes, { modelId: id.modelId, tokenizerId: id.tokenizerId, layers: c.nLayers, kvDim: c.kvDim, maxSeq: MAX_SEQ });
          return decoded.kv.length;
        },
      },
      { name: 'importState', run: async () => (await cached.importState(decoded.manifest.tokens, decoded.kv), cached.length) },
    ],
    rounds,
    warmup,
  );
  fresh.dispose();
  cached.dispose();
  if (last[0] !== last[1]) throw new Error(`${t.provider}: first token with a cache (${last[1]}) differs from a fresh prefill (${last[0]})`);
  const diff = maxAbsDiff(freshLogits, cachedLogits);
  const timed = (xs: number[]) => xs.slice(warmup);
  return [
    recordOf({
      point: 2,
      lane: t.lane,
      provider: t.provider,
      case: `time to first token, ${LONG_PROMPT_TOKENS}-token prompt: prompt cache vs fresh`,
      baseline: figures[0]!,
      candidate: figures[1]!,
      figures: {
        'speedup (fresh / cached)': figures[0]!.medianMs / figures[1]!.medianMs,
        'first token': last[0]!,
        'max |logit diff| fresh vs cached': diff,
        'cache blob bytes': blobBytes,
      },
    }),
    recordOf({
      point: 2,
      lane: t.lane,
      provider: t.provider,
      role: 'detail',
      case: `  of which: loadPromptCache vs prefill of the last ${LONG_PROMPT_TOKENS - CACHED_PREFIX_TOKENS}`,
      baseline: figure('prefill of the remainder', timed(restMs)),
      candidate: figure(`loadPromptCache (${CACHED_PREFIX_TOKENS} positions)`, timed(loadMs)),
      figures: {
        'load = readBlob ms': parts.figures[0]!.medianMs,
        '+ decodePromptCache (digest, checks) ms': parts.figures[1]!.medianMs,
        '+ importState ms': parts.figures[2]!.medianMs,
        'savePromptCache ms (once)': saveMs,
      },
    }),
  ];
}

/**
 * Point 3: SPECULATIVE_TOKENS greedy tokens after the repetitive prompt, plain vs prompt-lookup
 * speculative (no stop tokens, so both produce exactly that many). Each round rolls back and prefills all
 * but the prompt's last token untimed; generate() then prefills that one token and decodes. The outputs
 * must be identical. The speculative session's zeroRowsForLane (the rollback of rejected draft rows) is
 * wrapped to count and time it: that is where a rejected draft costs.
 */
export async function speculativeCase(t: BenchTarget, rounds = 5, warmup = 1): Promise<SessionRecord> {
  const ids = t.tokenizer.encode(REPETITIVE_TEXT, { bos: true });
  const plain = await openSession(t);
  const spec = await openSession(t);
  const zeroing = { calls: 0, ms: 0 };
  const original = spec.zeroRowsForLane.bind(spec);
  spec.zeroRowsForLane = async (from: number, to: number): Promise<void> => {
    const a = performance.now();
    await original(from, to);
    if (to > from) {
      zeroing.calls++;
      zeroing.ms += performance.now() - a;
    }
  };
  let statsBefore = spec.speculationStats();
  let zeroBefore = { ...zeroing };
  const run = async (s: TextSession, speculative: boolean): Promise<number[]> => {
    const out: number[] = [];
    const options = { maxTokens: SPECULATIVE_TOKENS, stopTokens: [], ...(speculative ? { speculative: SPECULATIVE } : {}) };
    for await (const g of s.generate(ids, options)) out.push(g.token);
    return out;
  };
  const { figures, last } = await interleaved<number[]>(
    [
      {
        name: `plain greedy, ${SPECULATIVE_TOKENS} tokens`,
        setup: async () => {
          await plain.reset();
          await plain.prefill(ids.slice(0, -1));
        },
        run: () => run(plain, false),
      },
      {
        name: `speculative (lookahead ${SPECULATIVE.lookahead}, ngram ${SPECULATIVE.ngram})`,
        setup: async () => {
          await spec.reset();
          await spec.prefill(ids.slice(0, -1));
          statsBefore = spec.speculationStats();
          zeroBefore = { ...zeroing };
        },
        run: () => run(spec, true),
      },
    ],
    rounds,
    warmup,
  );
  const stats = spec.speculationStats();
  plain.dispose();
  spec.dispose();
  const [a, b] = last as [number[], number[]];
  if (a.length !== SPECULATIVE_TOKENS || !sameIds(a, b)) throw new Error(`${t.provider}: speculative output differs from plain greedy:\n${a.join(',')}\n${b.join(',')}`);
  const passes = stats.passes - statsBefore.passes;
  const drafted = stats.drafted - statsBefore.drafted;
  const accepted = stats.accepted - statsBefore.accepted;
  return recordOf({
    point: 3,
    lane: t.lane,
    provider: t.provider,
    case: `speculative vs plain greedy, repetitive prompt (${ids.length} ids)`,
    baseline: figures[0]!,
    candidate: figures[1]!,
    figures: {
      'outputs identical': true,
      'verification passes': passes,
      drafted,
      accepted,
      'acceptance rate': drafted === 0 ? 0 : accepted / drafted,
      'plain decode steps in the speculative run': SPECULATIVE_TOKENS - passes - accepted,
      'rejected-row zeroings (lane rollbacks)': zeroing.calls - zeroBefore.calls,
      'ms in rejected-row zeroing (last run)': zeroing.ms - zeroBefore.ms,
    },
  });
}

/**
 * Point 4: at depths 16 and 400 (a session each, interleaved), step ROLLBACK_TOKENS tokens untimed and
 * time rollback() to the checkpoint taken before them; checkpoint() itself is timed over
 * CHECKPOINT_CALLS calls. Detail: the same rollback at depth 16 on a session of SMALL_MAX_SEQ positions,
 * which tells the committed depth apart from the capacity of the cache.
 */
export async function rollbackCase(t: BenchTarget, rounds = 31, warmup = 2): Promise<SessionRecord[]> {
  const ids = longPrompt(t.tokenizer);
  const step = ids.slice(100, 100 + ROLLBACK_TOKENS);
  const [shallow, deep] = ROLLBACK_DEPTHS;
  const make = async (depth: number, maxSeq = MAX_SEQ): Promise<TextSession> => {
    const s = await openSession(t, maxSeq);
    for (let at = 0; at < depth; at += MAX_BATCH) await s.prefill(ids.slice(at, Math.min(depth, at + MAX_BATCH)));
    return s;
  };
  const sessions = { shallow: await make(shallow), deep: await make(deep), small: await make(shallow, SMALL_MAX_SEQ) };
  const rollbackSide = (s: TextSession, name: string): Side<number> => {
    let cp = s.checkpoint();
    return {
      name,
      setup: async () => {
        cp = s.checkpoint();
        await s.prefill(step);
      },
      run: async () => {
        await s.rollback(cp);
        return s.length;
      },
    };
  };
  const rb = await interleaved(
    [
      rollbackSide(sessions.shallow, `rollback ${ROLLBACK_TOKENS} at ${shallow} committed`),
      rollbackSide(sessions.deep, `rollback ${ROLLBACK_TOKENS} at ${deep} committed`),
      rollbackSide(sessions.small, `rollback ${ROLLBACK_TOKENS} at ${shallow}, maxSeq ${SMALL_MAX_SEQ}`),
    ],
    rounds,
    warmup,
  );
  if (rb.last[0] !== shallow || rb.last[1] !== deep || rb.last[2] !== shallow) throw new Error(`${t.provider}: rollback left lengths ${rb.last.join(',')}`);
  const checkpointSide = (s: TextSession, depth: number): Side<number> => ({
    name: `checkpoint() at ${depth} committed (per call)`,
    run: async () => {
      let sum = 0;
      for (let i = 0; i < CHECKPOINT_CALLS; i++) sum += s.checkpoint().length;
      return sum;
    },
  });
  const cp = await interleaved([checkpointSide(sessions.shallow, shallow), checkpointSide(sessions.deep, deep)], rounds, warmup);
  const perCall = (f: Figure): Figure => ({ ...f, medianMs: f.medianMs / CHECKPOINT_CALLS, minMs: f.minMs / CHECKPOINT_CALLS, maxMs: f.maxMs / CHECKPOINT_CALLS });
  // Context: one decode step at the deep session (rolled back untimed), to express a rollback in steps.
  const deepCp = sessions.deep.checkpoint();
  const stepTiming = await interleaved<number>(
    [
      {
        name: `decode step at ${deep}`,
        setup: () => sessions.deep.rollback(deepCp),
        run: async () => (await sessions.deep.decode(step[0]!)).argmax,
      },
    ],
    5,
    1,
  );
  const c = t.model.config;
  const cacheBytes = (maxSeq: number) => 2 * c.nLayers * maxSeq * c.kvDim * 4;
  const zeroedBytes = 2 * c.nLayers * ROLLBACK_TOKENS * c.kvDim * 4;
  for (const s of Object.values(sessions)) s.dispose();
  return [
    recordOf({
      point: 4,
      lane: t.lane,
      provider: t.provider,
      case: `rollback of ${ROLLBACK_TOKENS} tokens: ${deep} vs ${shallow} committed`,
      baseline: rb.figures[0]!,
      candidate: rb.figures[1]!,
      figures: {
        'bytes the rolled-back rows hold': zeroedBytes,
        'KV cache bytes (maxSeq 512)': cacheBytes(MAX_SEQ),
        [`rollback at ${deep} in decode steps`]: rb.figures[1]!.medianMs / stepTiming.figures[0]!.medianMs,
        'decode step ms (context)': stepTiming.figures[0]!.medianMs,
      },
    }),
    recordOf({
      point: 4,
      lane: t.lane,
      provider: t.provider,
      case: `checkpoint(): ${deep} vs ${shallow} committed`,
      baseline: perCall(cp.figures[0]!),
      candidate: perCall(cp.figures[1]!),
      figures: { 'calls per round': CHECKPOINT_CALLS },
    }),
    recordOf({
      point: 4,
      lane: t.lane,
      provider: t.provider,
      role: 'detail',
      case: `  rollback at ${shallow}: maxSeq ${MAX_SEQ} vs ${SMALL_MAX_SEQ} (capacity)`,
      baseline: rb.figures[2]!,
      candidate: rb.figures[0]!,
      figures: {
        [`KV cache bytes (maxSeq ${SMALL_MAX_SEQ})`]: cacheBytes(SMALL_MAX_SEQ),
        [`KV cache bytes (maxSeq ${MAX_SEQ})`]: cacheBytes(MAX_SEQ),
      },
    }),
  ];
}

/** KV cache geometries for zeroingCase: slots (2 per layer), positions, kvDim (models/README.md, llama2.c). */
export const CACHE_GEOMETRIES = [
  { label: 'stories260K', layers: 5, maxSeq: 512, kvDim: 32 },
  { label: 'stories110M', layers: 12, maxSeq: 1024, kvDim: 768 },
] as const;

/**
 * Point 4, attribution (WebGPU only): TextSession's rollback restores "rows past the committed length are
 * zero" by taking a host mapping (prepareHostMut) of every K and V cache, filling the rows and writing the
 * whole cache back: on WebGPU that downloads and uploads every cache whatever the number of rows. This
 * times exactly that on plain tensors shaped like the caches, against writing zeros to the rolled-back
 * rows only (an alias of the rows and viewMut.write, i.e. one queue.writeBuffer per cache), for a small
 * and a large model's geometry. Both sides end once their uploads are queued, as rollback() does.
 */
export async function zeroingCase(provider: WebGPUProvider, lane: Lane, name: ProviderName, rounds = 5, warmup = 1): Promise<SessionRecord[]> {
  const out: SessionRecord[] = [];
  for (const g of CACHE_GEOMETRIES) {
    const group = createAllocationGroup();
    const caches: DescriptorSlot[] = [];
    const rows: DescriptorSlot[] = [];
    const from = ROLLBACK_DEPTHS[1];
    for (let i = 0; i < 2 * g.layers; i++) {
      const r = group.insert(await zeros(provider, 'f32', [g.maxSeq, g.kvDim]));
      caches.push(r.descriptor);
      rows.push(group.alias(r.allocation, 'f32', { shape: [ROLLBACK_TOKENS, g.kvDim], byteOffset: from * g.kvDim * 4 }));
    }
    const blank = new Float32Array(ROLLBACK_TOKENS * g.kvDim);
    const { figures } = await interleaved<number>(
      [
        {
          name: 'host mapping of every cache (as rollback does)',
          run: async () => {
            for (const slot of caches) {
              using m = group.viewMut<'f32'>(slot);
              using p = await m.prepareHostMut();
              if (p.kind === 'contiguous') p.asArray().fill(0, from * g.kvDim, (from + ROLLBACK_TOKENS) * g.kvDim);
            }
            return caches.length;
          },
        },
        {
          name: `write zeros to the ${ROLLBACK_TOKENS} rows only`,
          run: async () => {
            for (const slot of rows) {
              using m = group.viewMut<'f32'>(slot);
              await m.write(blank);
            }
            return rows.length;
          },
        },
      ],
      rounds,
      warmup,
    );
    // Both sides leave the caches all zero (nothing else was ever written): check one back.
    {
      using v = group.view<'f32'>(caches[0]!);
      if ((await v.toArray()).some((x) => x !== 0)) throw new Error(`${name}: a cache is not zero after zeroing`);
    }
    group.dispose();
    const cacheBytes = 2 * g.layers * g.maxSeq * g.kvDim * 4;
    out.push(
      recordOf({
        point: 4,
        lane,
        provider: name,
        role: 'detail',
        case: `  zero ${ROLLBACK_TOKENS} rows, ${g.label} caches: rows-only write vs mapping`,
        baseline: figures[0]!,
        candidate: figures[1]!,
        figures: {
          caches: 2 * g.layers,
          'KV cache bytes': cacheBytes,
          'bytes moved by the mapping (down + up)': 2 * cacheBytes,
          'bytes the rows hold': 2 * g.layers * ROLLBACK_TOKENS * g.kvDim * 4,
          'speedup (mapping / rows-only)': figures[0]!.medianMs / figures[1]!.medianMs,
        },
      }),
    );
  }
  return out;
}

const fmtMs = (ms: number): string => (ms >= 100 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(3) : ms >= 0.01 ? ms.toFixed(4) : ms.toExponential(2));
const fmtValue = (v: unknown): string => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(3)) : String(v));

/** The ratio table, as lines (printed by both parts). */
export function formatTable(title: string, rows: readonly SessionRecord[]): string {
  const lines = [title];
  const header = `${'pt'.padEnd(3)}${'lane'.padEnd(9)}${'provider'.padEnd(29)}${'case'.padEnd(62)}${'base ms'.padStart(11)}${'cand ms'.padStart(11)}${'cand/base'.padStart(10)}${'min c/b'.padStart(9)}  figures`;
  lines.push(header, '-'.repeat(header.length + 40));
  for (const r of rows) {
    const figures = Object.entries(r.figures)
      .map(([k, v]) => `${k}=${fmtValue(v)}`)
      .join('; ');
    lines.push(
      `${String(r.point).padEnd(3)}${r.lane.padEnd(9)}${r.provider.slice(0, 28).padEnd(29)}${r.case.slice(0, 61).padEnd(62)}${fmtMs(r.baseline.medianMs).padStart(11)}${fmtMs(r.candidate.medianMs).padStart(11)}${r.ratio.toFixed(2).padStart(10)}${r.minRatio.toFixed(2).padStart(9)}  ${figures}`,
    );
  }
  return lines.join('\n');
}
