// The cases of the inference-session benchmark (issue 5, acceptance point 6; issue 9 point 7), shared by
// the Node part (host provider and Dawn) and the Chromium part (WebGPU in the page, host provider over
// shared memory, prompt caches on OPFS); no node:* imports here. Every case drives TextSession through its
// public API only (prefill, decode, generate with `speculative`, checkpoint/rollback, reset, prompt caches)
// and returns SessionRecords: two measured sides, their time ratio, the case's own figures, and the
// hardware label of bench/report.ts (a row measured on a software adapter says so). Cases check that both
// sides compute the same (same greedy ids, same first token, same state) and throw when that fails;
// nothing here asserts anything about time.
//   1 decodeCase       greedy decode tokens/s, host provider vs WebGPU, in one lane
//   2 ttftCase         time to first token of a 400-token prompt: fresh prefill vs a loaded prompt cache
//                      and the prefill of the rest, both as the session prefills (chunks of maxBatch, the
//                      logits read back once, after the last chunk), plus a one-pass prefill as a detail
//   3 speculativeCase  prompt-lookup speculative vs plain greedy generation, on a repetitive prompt and on
//                      ordinary ones, with the acceptance figures
//   4 rollbackCase     rollback of k tokens (today's ranged zeroing of the rolled-back rows) at 16 and at
//                      400 committed tokens, against reset + re-prefill of the same 400 tokens (the way
//                      back without rollback), and checkpoint() at both depths
//   5 decodeModesCase  issue 11, on one WebGPU adapter: greedy generation with the plain step path
//                      (decode: 'plain', submit and wait per step, logits read back) against chained,
//                      pipelined steps (the default): decode tokens/s, time to first token of the
//                      LONG_PROMPT_TOKENS prompt, and the per-token counters of both (queue submissions,
//                      host waits, bytes read back, downloads, buffers and bind groups created, dispatches)
import { DEFAULT_STEPS_AHEAD, TextSession, argmaxOf, createRuntime, decodePromptCache, parseLlamaModel, parseTokenizer, readBlob } from '../../src/index.js';
import type { DecodeMode, HostProvider, LlamaModelFile, Runtime, Session as PlaneSession, Tokenizer, WebGPUProvider } from '../../src/index.js';
import { HOST_CPU, describeAdapter, hardwareColumn, hardwareLabel, median, softwareNotice } from '../report.js';
import type { HardwareLabel, Where } from '../report.js';

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
/** Point 2 detail: maxBatch of a session that prefills the whole prompt in one pass. */
export const ONE_PASS_MAX_BATCH = MAX_SEQ;
/** Point 3: tokens generated per run, and the prompt-lookup settings. */
export const SPECULATIVE_TOKENS = 96;
export const SPECULATIVE = { lookahead: 4, ngram: 2 } as const;
/** Point 4: committed depths; tokens stepped then rolled back (and the larger count of the detail row). */
export const ROLLBACK_DEPTHS = [16, 400] as const;
export const ROLLBACK_TOKENS = 4;
export const ROLLBACK_TOKENS_MANY = 64;
/** Point 4: rounds of rollback vs reset + re-prefill (each round prefills 400 tokens). */
export const REPLAY_ROUNDS = 6;
/** Point 4 detail: a session with a small context, to tell depth apart from cache capacity. */
export const SMALL_MAX_SEQ = 64;
/** checkpoint() is a few hundred nanoseconds: it is timed over this many calls per round. */
export const CHECKPOINT_CALLS = 2000;
/** Point 5: greedy tokens per timed generation, plain vs chained decode. */
export const MODES_DECODE_TOKENS = 64;

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

/**
 * Point 3: the prompts speculation is measured on. The repetitive one is its best case; the ordinary ones
 * are what users type: the fixture's own opening line, and a short story start that repeats no phrase
 * (drafts then come only from what the model itself repeats while generating).
 */
export const SPECULATIVE_PROMPTS = [
  { kind: 'repetitive', text: REPETITIVE_TEXT },
  { kind: 'ordinary', text: DECODE_PROMPT },
  { kind: 'ordinary', text: 'Ben and his sister Mia went to the beach with their dad. They built a big sand castle and looked for shells near the water.' },
] as const;

/** Recorded with the results. */
export const SETTINGS = {
  maxSeq: MAX_SEQ,
  maxBatch: MAX_BATCH,
  decode: { prompt: DECODE_PROMPT, steps: DECODE_STEPS },
  ttft: { promptTokens: LONG_PROMPT_TOKENS, cachedPrefixTokens: CACHED_PREFIX_TOKENS, maxBatch: MAX_BATCH, onePassDetailMaxBatch: ONE_PASS_MAX_BATCH },
  speculative: { tokens: SPECULATIVE_TOKENS, ...SPECULATIVE, prompts: SPECULATIVE_PROMPTS },
  rollback: { depths: ROLLBACK_DEPTHS, tokens: ROLLBACK_TOKENS, manyTokens: ROLLBACK_TOKENS_MANY, smallMaxSeq: SMALL_MAX_SEQ, checkpointCallsPerRound: CHECKPOINT_CALLS, replayRounds: REPLAY_ROUNDS },
  decodeModes: { prompt: DECODE_PROMPT, tokens: MODES_DECODE_TOKENS, stepsAhead: DEFAULT_STEPS_AHEAD, ttftPromptTokens: LONG_PROMPT_TOKENS, maxBatch: MAX_BATCH },
} as const;

export type Lane = 'node' | 'chromium';
export type ProviderName = 'host' | 'host-shared' | 'webgpu-dawn' | 'webgpu-chromium';

/** One provider of a lane, with its runtime, the parsed fixtures and where it computes. */
export interface BenchTarget {
  readonly lane: Lane;
  readonly provider: ProviderName;
  readonly runtime: Runtime;
  readonly model: LlamaModelFile;
  readonly tokenizer: Tokenizer;
  /** 'host' for the host provider, else the WebGPU adapter (software or not). */
  readonly where: Where;
}

export function makeTarget(lane: Lane, provider: ProviderName, gpuOrHost: HostProvider | WebGPUProvider, modelBytes: Uint8Array, tokBytes: Uint8Array): BenchTarget {
  const model = parseLlamaModel(modelBytes);
  const tokenizer = parseTokenizer(tokBytes, model.config.vocabSize);
  const where: Where = gpuOrHost.kind === 'webgpu' ? describeAdapter(gpuOrHost.adapterInfo, gpuOrHost.device) : 'host';
  return { lane, provider, runtime: createRuntime(gpuOrHost), model, tokenizer, where };
}

export function openSession(t: BenchTarget, maxSeq = MAX_SEQ, maxBatch = MAX_BATCH, decode: DecodeMode = 'chained'): Promise<TextSession> {
  return TextSession.create({ runtime: t.runtime, model: t.model, tokenizer: t.tokenizer, maxSeq, maxBatch, decode });
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
export interface SessionRecord extends HardwareLabel {
  /**
   * Issue 5 acceptance point 6 item: 1 decode, 2 time to first token, 3 speculative, 4 checkpoint/rollback;
   * 5: issue 11's plain vs chained decode.
   */
  readonly point: 1 | 2 | 3 | 4 | 5;
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

type RecordInput = Omit<SessionRecord, 'ratio' | 'minRatio' | 'role' | keyof HardwareLabel> & { readonly role?: SessionRecord['role'] };

/** A row whose sides ran on `targets` (their hardware labels the row). */
function recordOf(targets: readonly BenchTarget[], input: RecordInput): SessionRecord {
  const { baseline, candidate } = input;
  const label = targets.length === 0 ? HOST_CPU : hardwareLabel(...targets.map((t) => t.where));
  return { ...input, role: input.role ?? 'headline', ratio: candidate.medianMs / baseline.medianMs, minRatio: candidate.minMs / baseline.minMs, ...label };
}

/** Downloads into host memory (the provider's ledger) that `work` caused: on WebGPU, each is one readback. */
async function downloadsDuring(t: BenchTarget, work: () => Promise<unknown>): Promise<number> {
  const provider = t.runtime.provider;
  const mark = provider.ledgerMark();
  await work();
  return provider.ledgerSince(mark).filter((e) => e.kind === 'copy' && e.to === 'host').length;
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
  return recordOf([host, gpu], {
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
 * prompt, like with like: both sides are sessions of the same maxBatch (MAX_BATCH) and prefill as the
 * session does, in chunks whose logits are not read back except the last's, so each side downloads the
 * same (checked with the provider's ledger). Fresh: prefill of the whole prompt and its greedy choice.
 * Cached: loadPromptCache of a cache holding the first CACHED_PREFIX_TOKENS (read from OPFS, digest and
 * identity checked, KV rows imported), prefill of the rest, greedy choice. Both sessions exist and are
 * reset untimed before each call. Both must choose the same first token. Details: where a load's time
 * goes, and the fresh prefill in one pass (maxBatch ONE_PASS_MAX_BATCH) against the chunked one.
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
  const onePass = await openSession(t, MAX_SEQ, ONE_PASS_MAX_BATCH);
  const loadMs: number[] = [];
  const restMs: number[] = [];
  let freshLogits: Float32Array = new Float32Array(0);
  let cachedLogits: Float32Array = new Float32Array(0);
  const { figures, last } = await interleaved<number>(
    [
      {
        name: `fresh prefill ${LONG_PROMPT_TOKENS} (chunks of ${MAX_BATCH}) + first token`,
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
      {
        name: `fresh prefill ${LONG_PROMPT_TOKENS} in one pass + first token`,
        setup: () => onePass.reset(),
        run: async () => (await onePass.prefill(ids)).argmax,
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
  // Readbacks per side (untimed runs): the ledger's downloads into host memory (none on the host provider).
  const downloads = {
    fresh: await downloadsDuring(t, async () => (await fresh.reset(), await fresh.prefill(ids))),
    cached: await downloadsDuring(t, async () => {
      await cached.reset();
      const m = await cached.loadPromptCache(store, path, { prompt: ids });
      await cached.prefill(ids.slice(m.tokens.length));
    }),
    onePass: await downloadsDuring(t, async () => (await onePass.reset(), await onePass.prefill(ids))),
  };
  fresh.dispose();
  cached.dispose();
  onePass.dispose();
  if (last[0] !== last[1] || last[0] !== last[2]) throw new Error(`${t.provider}: first tokens differ: fresh ${last[0]}, cached ${last[1]}, one pass ${last[2]}`);
  if (downloads.fresh !== downloads.cached) throw new Error(`${t.provider}: fresh prefill downloads ${downloads.fresh} times, the cached path ${downloads.cached}: not like with like`);
  const diff = maxAbsDiff(freshLogits, cachedLogits);
  const timed = (xs: number[]) => xs.slice(warmup);
  return [
    recordOf([t], {
      point: 2,
      lane: t.lane,
      provider: t.provider,
      case: `time to first token, ${LONG_PROMPT_TOKENS}-token prompt: prompt cache vs fresh`,
      baseline: figures[0]!,
      candidate: figures[1]!,
      figures: {
        'speedup (fresh / cached)': figures[0]!.medianMs / figures[1]!.medianMs,
        'maxBatch (both sessions)': MAX_BATCH,
        'downloads to host (fresh, cached)': `${downloads.fresh}, ${downloads.cached}`,
        'first token': last[0]!,
        'max |logit diff| fresh vs cached': diff,
        'cache blob bytes': blobBytes,
      },
    }),
    recordOf([t], {
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
    recordOf([t], {
      point: 2,
      lane: t.lane,
      provider: t.provider,
      role: 'detail',
      case: `  fresh prefill: one pass vs ${Math.ceil(LONG_PROMPT_TOKENS / MAX_BATCH)} chunks of ${MAX_BATCH}`,
      baseline: figures[0]!,
      candidate: figures[2]!,
      figures: {
        'chunks (each: submit, proven completion; logits read back after the last)': Math.ceil(LONG_PROMPT_TOKENS / MAX_BATCH),
        'downloads to host (chunked, one pass)': `${downloads.fresh}, ${downloads.onePass}`,
        'speedup of the cache against the one-pass prefill': figures[2]!.medianMs / figures[1]!.medianMs,
      },
    }),
  ];
}

/** Acceptance figures of one speculative run, from speculationStats() read after every yielded token. */
interface Acceptance {
  readonly passes: number;
  readonly drafted: number;
  readonly accepted: number;
  /** Verification passes that rejected at least one draft (their rejected rows are rolled back). */
  readonly passesWithRejection: number;
}

/** Generates SPECULATIVE_TOKENS greedy ids after `ids` (no stop tokens, so exactly that many). */
async function generateIds(s: TextSession, ids: readonly number[], speculative: boolean, track?: (stats: ReturnType<TextSession['speculationStats']>) => void): Promise<number[]> {
  const out: number[] = [];
  const options = { maxTokens: SPECULATIVE_TOKENS, stopTokens: [], ...(speculative ? { speculative: SPECULATIVE } : {}) };
  for await (const g of s.generate(ids, options)) {
    out.push(g.token);
    track?.(s.speculationStats());
  }
  return out;
}

/**
 * Point 3: SPECULATIVE_TOKENS greedy tokens after one prompt, plain vs prompt-lookup speculative, through
 * generate() (the speculative option) only. Each round resets and prefills all but the prompt's last
 * token untimed; generate() then prefills that one token and decodes. The outputs must be identical.
 * Acceptance comes from speculationStats(): its totals over the timed run, and, in one more untimed run
 * that reads it after every yielded token, how many passes rejected a draft.
 */
export async function speculativeCase(t: BenchTarget, prompt: (typeof SPECULATIVE_PROMPTS)[number], rounds = 4, warmup = 1): Promise<SessionRecord> {
  const ids = t.tokenizer.encode(prompt.text, { bos: true });
  const plain = await openSession(t);
  const spec = await openSession(t);
  const prepare = async (s: TextSession): Promise<void> => {
    await s.reset();
    await s.prefill(ids.slice(0, -1));
  };
  let statsBefore = spec.speculationStats();
  const { figures, last } = await interleaved<number[]>(
    [
      { name: `plain greedy, ${SPECULATIVE_TOKENS} tokens`, setup: () => prepare(plain), run: () => generateIds(plain, ids, false) },
      {
        name: `speculative (lookahead ${SPECULATIVE.lookahead}, ngram ${SPECULATIVE.ngram})`,
        setup: async () => {
          await prepare(spec);
          statsBefore = spec.speculationStats();
        },
        run: () => generateIds(spec, ids, true),
      },
    ],
    rounds,
    warmup,
  );
  const stats = spec.speculationStats();
  const total: Acceptance = {
    passes: stats.passes - statsBefore.passes,
    drafted: stats.drafted - statsBefore.drafted,
    accepted: stats.accepted - statsBefore.accepted,
    passesWithRejection: 0,
  };
  // One untimed run that watches every pass: a pass that proposed more than it accepted rejected a draft.
  await prepare(spec);
  let seen = spec.speculationStats();
  let rejecting = 0;
  const watched = await generateIds(spec, ids, true, (now) => {
    if (now.passes > seen.passes && now.drafted - seen.drafted > now.accepted - seen.accepted) rejecting++;
    seen = now;
  });
  plain.dispose();
  spec.dispose();
  const [a, b] = last as [number[], number[]];
  if (a.length !== SPECULATIVE_TOKENS || !sameIds(a, b) || !sameIds(a, watched)) throw new Error(`${t.provider}: speculative output differs from plain greedy:\n${a.join(',')}\n${b.join(',')}`);
  const plainSteps = SPECULATIVE_TOKENS - total.passes - total.accepted;
  return recordOf([t], {
    point: 3,
    lane: t.lane,
    provider: t.provider,
    case: `speculative vs plain greedy, ${prompt.kind} prompt (${ids.length} ids)`,
    baseline: figures[0]!,
    candidate: figures[1]!,
    figures: {
      prompt: prompt.kind,
      'outputs identical': true,
      'verification passes': total.passes,
      'passes with a rejected draft': rejecting,
      drafted: total.drafted,
      accepted: total.accepted,
      'acceptance rate': total.drafted === 0 ? 0 : total.accepted / total.drafted,
      'tokens per verification pass': total.passes === 0 ? 0 : (total.passes + total.accepted) / total.passes,
      'plain decode steps in the speculative run': plainSteps,
      [`forward passes for ${SPECULATIVE_TOKENS} tokens (speculative; plain ${SPECULATIVE_TOKENS})`]: total.passes + plainSteps,
    },
  });
}

/**
 * Point 4, with today's rollback (it zeroes only the rolled-back rows of every K and V cache). Sessions at
 * 16 and at 400 committed tokens, and one at 16 with a SMALL_MAX_SEQ context; each timed side steps its
 * tokens untimed after taking a fresh checkpoint, then times the way back to that checkpoint:
 *   rollback(cp) of ROLLBACK_TOKENS at 16, at 400 and at 16 with the small context, and of
 *   ROLLBACK_TOKENS_MANY at 400 (`rounds` each); and, in REPLAY_ROUNDS against the rollback at 400, the
 *   baseline that exists without rollback: reset() plus the prefill of the same 400 tokens (in the same
 *   chunks as the session was built).
 * The state after a rollback must equal the state after reset + re-prefill (rows past 400 zero, the rest
 * as recomputed). checkpoint() is timed over CHECKPOINT_CALLS calls.
 */
export async function rollbackCase(t: BenchTarget, rounds = 31, warmup = 2): Promise<SessionRecord[]> {
  const ids = longPrompt(t.tokenizer);
  const [shallow, deep] = ROLLBACK_DEPTHS;
  const stepOf = (k: number) => ids.slice(100, 100 + k);
  const make = async (depth: number, maxSeq = MAX_SEQ): Promise<TextSession> => {
    const s = await openSession(t, maxSeq);
    await s.prefill(ids.slice(0, depth));
    return s;
  };
  const sessions = { shallow: await make(shallow), deep: await make(deep), small: await make(shallow, SMALL_MAX_SEQ) };
  const rollbackSide = (s: TextSession, k: number, name: string): Side<number> => {
    let cp = s.checkpoint();
    return {
      name,
      setup: async () => {
        cp = s.checkpoint();
        await s.prefill(stepOf(k));
      },
      run: async () => {
        await s.rollback(cp);
        return s.length;
      },
    };
  };
  const sides: Side<number>[] = [
    rollbackSide(sessions.shallow, ROLLBACK_TOKENS, `rollback ${ROLLBACK_TOKENS} at ${shallow} committed`),
    rollbackSide(sessions.deep, ROLLBACK_TOKENS, `rollback ${ROLLBACK_TOKENS} at ${deep} committed`),
    rollbackSide(sessions.small, ROLLBACK_TOKENS, `rollback ${ROLLBACK_TOKENS} at ${shallow}, maxSeq ${SMALL_MAX_SEQ}`),
    rollbackSide(sessions.deep, ROLLBACK_TOKENS_MANY, `rollback ${ROLLBACK_TOKENS_MANY} at ${deep} committed`),
  ];
  const rb = await interleaved(sides, rounds, warmup);
  const expected = [shallow, deep, shallow, deep];
  if (!sameIds(rb.last, expected)) throw new Error(`${t.provider}: rollback left lengths ${rb.last.join(',')}, not ${expected.join(',')}`);
  // The way back without rollback, against the rollback it replaces (fewer rounds: a re-prefill is
  // thousands of times slower, so drift cannot matter at that ratio, and each round costs a prefill).
  const replay = sessions.deep;
  const vsReplay = await interleaved<number>(
    [
      rollbackSide(sessions.deep, ROLLBACK_TOKENS, `rollback ${ROLLBACK_TOKENS} at ${deep} committed`),
      {
        name: `reset + prefill ${deep} (from ${deep + ROLLBACK_TOKENS})`,
        setup: async () => void (await replay.prefill(stepOf(ROLLBACK_TOKENS))),
        run: async () => {
          await replay.reset();
          await replay.prefill(ids.slice(0, deep));
          return replay.length;
        },
      },
    ],
    REPLAY_ROUNDS,
    1,
  );
  if (!sameIds(vsReplay.last, [deep, deep])) throw new Error(`${t.provider}: rollback / re-prefill left lengths ${vsReplay.last.join(',')}`);
  // Same state both ways: after a rollback of ROLLBACK_TOKENS at 400, and after reset + re-prefill.
  const cache = async (): Promise<Float32Array> => replay.exportState(replay.maxSeq);
  const cp = replay.checkpoint();
  await replay.prefill(stepOf(ROLLBACK_TOKENS));
  await replay.rollback(cp);
  const afterRollback = await cache();
  await replay.reset();
  await replay.prefill(ids.slice(0, deep));
  const afterReplay = await cache();
  const c = t.model.config;
  const rowsPerCache = MAX_SEQ * c.kvDim;
  for (let cacheAt = 0; cacheAt < afterRollback.length; cacheAt += rowsPerCache) {
    if (afterRollback.subarray(cacheAt + deep * c.kvDim, cacheAt + rowsPerCache).some((x) => x !== 0)) throw new Error(`${t.provider}: rows past ${deep} are not zero after rollback`);
  }
  const stateDiff = maxAbsDiff(afterRollback, afterReplay);
  const checkpointSide = (s: TextSession, depth: number): Side<number> => ({
    name: `checkpoint() at ${depth} committed (per call)`,
    run: async () => {
      let sum = 0;
      for (let i = 0; i < CHECKPOINT_CALLS; i++) sum += s.checkpoint().length;
      return sum;
    },
  });
  const cps = await interleaved([checkpointSide(sessions.shallow, shallow), checkpointSide(sessions.deep, deep)], rounds, warmup);
  const perCall = (f: Figure): Figure => ({ ...f, medianMs: f.medianMs / CHECKPOINT_CALLS, minMs: f.minMs / CHECKPOINT_CALLS, maxMs: f.maxMs / CHECKPOINT_CALLS });
  // Context: one decode step at the deep session (rolled back untimed), to express a rollback in steps.
  let stepCp = sessions.deep.checkpoint();
  const stepTiming = await interleaved<number>(
    [
      {
        name: `decode step at ${deep}`,
        setup: async () => {
          if (sessions.deep.length > deep) await sessions.deep.rollback(stepCp);
          stepCp = sessions.deep.checkpoint();
        },
        run: async () => (await sessions.deep.decode(ids[100]!)).argmax,
      },
    ],
    5,
    1,
  );
  const cacheBytes = (maxSeq: number) => 2 * c.nLayers * maxSeq * c.kvDim * 4;
  const rowBytes = (k: number) => 2 * c.nLayers * k * c.kvDim * 4;
  for (const s of Object.values(sessions)) s.dispose();
  const [atShallow, atDeep, atSmall, manyAtDeep] = rb.figures as [Figure, Figure, Figure, Figure];
  const [rolledBack, replayed] = vsReplay.figures as [Figure, Figure];
  return [
    recordOf([t], {
      point: 4,
      lane: t.lane,
      provider: t.provider,
      case: `back to ${deep} committed: rollback ${ROLLBACK_TOKENS} vs reset + re-prefill`,
      baseline: replayed,
      candidate: rolledBack,
      figures: {
        'speedup (re-prefill / rollback)': replayed.medianMs / rolledBack.medianMs,
        'max |KV diff| rollback vs re-prefill': stateDiff,
        'bytes the rolled-back rows hold': rowBytes(ROLLBACK_TOKENS),
      },
    }),
    recordOf([t], {
      point: 4,
      lane: t.lane,
      provider: t.provider,
      case: `rollback of ${ROLLBACK_TOKENS} tokens: ${deep} vs ${shallow} committed`,
      baseline: atShallow,
      candidate: atDeep,
      figures: {
        'bytes the rolled-back rows hold': rowBytes(ROLLBACK_TOKENS),
        'KV cache bytes (maxSeq 512)': cacheBytes(MAX_SEQ),
        [`rollback at ${deep} in decode steps`]: atDeep.medianMs / stepTiming.figures[0]!.medianMs,
        'decode step ms (context)': stepTiming.figures[0]!.medianMs,
      },
    }),
    recordOf([t], {
      point: 4,
      lane: t.lane,
      provider: t.provider,
      case: `checkpoint(): ${deep} vs ${shallow} committed`,
      baseline: perCall(cps.figures[0]!),
      candidate: perCall(cps.figures[1]!),
      figures: { 'calls per round': CHECKPOINT_CALLS },
    }),
    recordOf([t], {
      point: 4,
      lane: t.lane,
      provider: t.provider,
      role: 'detail',
      case: `  rollback at ${deep}: ${ROLLBACK_TOKENS_MANY} vs ${ROLLBACK_TOKENS} tokens (rows zeroed)`,
      baseline: atDeep,
      candidate: manyAtDeep,
      figures: {
        [`bytes of ${ROLLBACK_TOKENS} rows`]: rowBytes(ROLLBACK_TOKENS),
        [`bytes of ${ROLLBACK_TOKENS_MANY} rows`]: rowBytes(ROLLBACK_TOKENS_MANY),
        [`rollback of ${ROLLBACK_TOKENS_MANY} vs re-prefill`]: manyAtDeep.medianMs / replayed.medianMs,
      },
    }),
    recordOf([t], {
      point: 4,
      lane: t.lane,
      provider: t.provider,
      role: 'detail',
      case: `  rollback at ${shallow}: maxSeq ${MAX_SEQ} vs ${SMALL_MAX_SEQ} (capacity)`,
      baseline: atSmall,
      candidate: atShallow,
      figures: {
        [`KV cache bytes (maxSeq ${SMALL_MAX_SEQ})`]: cacheBytes(SMALL_MAX_SEQ),
        [`KV cache bytes (maxSeq ${MAX_SEQ})`]: cacheBytes(MAX_SEQ),
      },
    }),
  ];
}

/**
 * What `work` cost on a target, everything a step can make the host and the GPU do: queue submissions and
 * host waits (the runtime's own, plus one each for every download of a buffer into host memory), bytes
 * that crossed to the host (readbacks and downloads), downloads, GPU buffers created (runtime buffers and
 * staging buffers alike), bind groups created and dispatches.
 */
interface Costs {
  readonly submissions: number;
  readonly hostWaits: number;
  readonly bytesToHost: number;
  readonly downloads: number;
  readonly buffersCreated: number;
  readonly bindGroupsCreated: number;
  readonly dispatches: number;
}

async function costsDuring(t: BenchTarget, work: () => Promise<unknown>): Promise<Costs> {
  const provider = t.runtime.provider;
  const s0 = t.runtime.stats();
  const c0 = provider.counters();
  const mark = provider.ledgerMark();
  await work();
  const s1 = t.runtime.stats();
  const c1 = provider.counters();
  const downloads = provider.ledgerSince(mark).filter((e) => e.kind === 'copy' && e.to === 'host');
  const downloadBytes = downloads.reduce((n, e) => n + (e.kind === 'copy' ? e.bytes : 0), 0);
  return {
    submissions: s1.queueSubmits - s0.queueSubmits + downloads.length,
    hostWaits: s1.hostAwaits - s0.hostAwaits + downloads.length,
    bytesToHost: s1.bytesReadBack - s0.bytesReadBack + downloadBytes,
    downloads: downloads.length,
    buffersCreated: c1.resourcesCreated - c0.resourcesCreated,
    bindGroupsCreated: s1.bindGroupsCreated - s0.bindGroupsCreated,
    dispatches: c1.dispatches - c0.dispatches,
  };
}

/** (a - b) / n per field: the cost of n tokens, with what both runs share taken out. */
function perToken(a: Costs, b: Costs, n: number): Costs {
  const out: Record<string, number> = {};
  for (const k of Object.keys(a) as (keyof Costs)[]) out[k] = (a[k] - b[k]) / n;
  return out as unknown as Costs;
}

/** The ids of a greedy generation of `tokens` tokens after `prompt` (no stop token). */
async function generated(s: TextSession, prompt: readonly number[], tokens: number): Promise<number[]> {
  const out: number[] = [];
  for await (const t of s.generate(prompt, { maxTokens: tokens, stopTokens: [] })) out.push(t.token);
  return out;
}

/**
 * The first token of a generation from `prompt`, as generate() gets it: the prefill, and the greedy choice
 * on the host from the logits it read back (plain), or the id the device chose, read back alone (chained).
 */
async function firstToken(s: TextSession, prompt: readonly number[], mode: DecodeMode): Promise<number> {
  if (mode === 'plain') return argmaxOf((await s.prefill(prompt)).logits);
  return (await s.prefill(prompt, { logits: false })).argmax;
}

/**
 * Point 5 (issue 11), on one WebGPU adapter, two sessions of the same runtime: `plain` (decode: 'plain':
 * every step written, submitted and waited for, its logits read back and the next token chosen on the
 * host) and `chained` (the default: steps chained on the live state group, greedy choices made on the
 * device, DEFAULT_STEPS_AHEAD steps kept in flight, 4 bytes read back per token).
 *   decode: each round resets and prefills DECODE_PROMPT untimed; the timed call is generate() of
 *     MODES_DECODE_TOKENS greedy tokens from the same prompt (the committed prompt is reused: one token is
 *     prefilled again, on both sides), so the time is decode time; tokens/s = tokens / median time.
 *   time to first token: each round resets untimed; the timed call prefills the LONG_PROMPT_TOKENS
 *     prompt (chunks of MAX_BATCH) and gets its first token as generate() does (see firstToken).
 * Per-token counters, from untimed runs after the timed ones (graphs and pools warm): a generation of
 * MODES_DECODE_TOKENS tokens minus one of 0 tokens (the same prefill), divided by the tokens. Both sides
 * must generate the same ids and the same first token.
 */
export async function decodeModesCase(t: BenchTarget, rounds = 3, warmup = 1): Promise<SessionRecord[]> {
  const prompt = t.tokenizer.encode(DECODE_PROMPT, { bos: true });
  const long = longPrompt(t.tokenizer);
  const sessions = { plain: await openSession(t, MAX_SEQ, MAX_BATCH, 'plain'), chained: await openSession(t) };
  const modes = ['plain', 'chained'] as const;
  const decode = await interleaved<number[]>(
    modes.map((mode) => ({
      name: `${mode}: ${MODES_DECODE_TOKENS} greedy tokens`,
      setup: async () => {
        await sessions[mode].reset();
        await sessions[mode].prefill(prompt, { logits: false });
      },
      run: () => generated(sessions[mode], prompt, MODES_DECODE_TOKENS),
    })),
    rounds,
    warmup,
  );
  const ttft = await interleaved<number>(
    modes.map((mode) => ({
      name: `${mode}: prefill ${LONG_PROMPT_TOKENS} + first token`,
      setup: () => sessions[mode].reset(),
      run: () => firstToken(sessions[mode], long, mode),
    })),
    rounds,
    warmup,
  );
  const [plainIds, chainedIds] = decode.last as [number[], number[]];
  if (!sameIds(plainIds, chainedIds)) throw new Error(`${t.provider}: plain and chained decoding differ: ${plainIds.slice(0, 10).join(',')} vs ${chainedIds.slice(0, 10).join(',')}`);
  if (ttft.last[0] !== ttft.last[1]) throw new Error(`${t.provider}: first tokens differ: plain ${ttft.last[0]}, chained ${ttft.last[1]}`);
  const costs: Record<string, Costs> = {};
  const ttftCosts: Record<string, Costs> = {};
  for (const mode of modes) {
    const s = sessions[mode];
    const run = async (tokens: number) => costsDuring(t, async () => {
      await s.reset();
      await s.prefill(prompt, { logits: false });
      return generated(s, prompt, tokens);
    });
    costs[mode] = perToken(await run(MODES_DECODE_TOKENS), await run(0), MODES_DECODE_TOKENS);
    await s.reset();
    ttftCosts[mode] = await costsDuring(t, () => firstToken(s, long, mode));
  }
  const dispatchesPerToken = sessions.chained.report().decode.dispatchesPerToken;
  for (const s of Object.values(sessions)) s.dispose();
  const tokPerS = (f: Figure) => (MODES_DECODE_TOKENS * 1000) / f.medianMs;
  const counterFigures = (c: Costs, mode: string): Record<string, number> =>
    Object.fromEntries(Object.entries(c).map(([k, v]) => [`${mode} ${k}`, v]));
  return [
    recordOf([t], {
      point: 5,
      lane: t.lane,
      provider: t.provider,
      case: `decode ${MODES_DECODE_TOKENS} greedy tokens: chained vs plain steps`,
      baseline: decode.figures[0]!,
      candidate: decode.figures[1]!,
      figures: {
        'plain tok/s': tokPerS(decode.figures[0]!),
        'chained tok/s': tokPerS(decode.figures[1]!),
        'speedup (plain / chained time)': decode.figures[0]!.medianMs / decode.figures[1]!.medianMs,
        'steps ahead': DEFAULT_STEPS_AHEAD,
        'decode graph dispatches': dispatchesPerToken ?? 'not compiled',
      },
    }),
    recordOf([t], {
      point: 5,
      lane: t.lane,
      provider: t.provider,
      role: 'detail',
      case: '  per decode token (untimed runs): plain vs chained counters',
      baseline: decode.figures[0]!,
      candidate: decode.figures[1]!,
      figures: { ...counterFigures(costs['plain']!, 'plain'), ...counterFigures(costs['chained']!, 'chained') },
    }),
    recordOf([t], {
      point: 5,
      lane: t.lane,
      provider: t.provider,
      case: `time to first token, ${LONG_PROMPT_TOKENS}-token prompt: chained vs plain steps`,
      baseline: ttft.figures[0]!,
      candidate: ttft.figures[1]!,
      figures: {
        'speedup (plain / chained time)': ttft.figures[0]!.medianMs / ttft.figures[1]!.medianMs,
        chunks: Math.ceil(LONG_PROMPT_TOKENS / MAX_BATCH),
        'first token': ttft.last[0]!,
        ...counterFigures(ttftCosts['plain']!, 'plain'),
        ...counterFigures(ttftCosts['chained']!, 'chained'),
      },
    }),
  ];
}

const fmtMs = (ms: number): string => (ms >= 100 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(3) : ms >= 0.01 ? ms.toFixed(4) : ms.toExponential(2));
const fmtValue = (v: unknown): string => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(3)) : String(v));

/** The ratio table, as lines (printed by both parts): a `measured on` column, and the software note. */
export function formatTable(title: string, rows: readonly SessionRecord[]): string {
  const lines = [title];
  const header = `${'pt'.padEnd(3)}${'lane'.padEnd(9)}${'provider'.padEnd(29)}${'case'.padEnd(62)}${'base ms'.padStart(11)}${'cand ms'.padStart(11)}${'cand/base'.padStart(10)}${'min c/b'.padStart(9)}  ${'measured on'.padEnd(46)}figures`;
  lines.push(header, '-'.repeat(header.length + 40));
  for (const r of rows) {
    const figures = Object.entries(r.figures)
      .map(([k, v]) => `${k}=${fmtValue(v)}`)
      .join('; ');
    lines.push(
      `${String(r.point).padEnd(3)}${r.lane.padEnd(9)}${r.provider.slice(0, 28).padEnd(29)}${r.case.slice(0, 61).padEnd(62)}${fmtMs(r.baseline.medianMs).padStart(11)}${fmtMs(r.candidate.medianMs).padStart(11)}${r.ratio.toFixed(2).padStart(10)}${r.minRatio.toFixed(2).padStart(9)}  ${hardwareColumn(r).padEnd(46)}${figures}`,
    );
  }
  lines.push(...softwareNotice(rows));
  return lines.join('\n');
}
