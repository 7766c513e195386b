// Plan: TextSession.chat() with real models, on the host provider of the lane (node: host; browser: host
// over SharedArrayBuffer). chat() is session logic over the forward pass that gguf-forward.test.ts checks
// on every provider; tiny-qwen2's 151,936-row classifier costs seconds per step on SwiftShader, so the
// chat suites stay on the host.
// - TS-chat-template: tiny-qwen2 (real Qwen vocabulary and chat template): the rendered prompt with
//   special tokens parsed is exactly llama.cpp's prompt ids for the same conversation, and the streamed
//   reply is llama.cpp's greedy reply for its first steps (all with a top-two gap over 0.5), its text the
//   streaming decode of those ids.
// - TS-chat-stop: the reply stops at each of the model's end-of-generation tokens (<|im_end|>,
//   <|endoftext|>) without yielding or committing it (an observer makes the model choose it).
// - TS-chat-prefix: the next turn of a conversation prefills only past the committed prefix it shares.
// - TS-chat-no-template: a model without a template (stories260K + tok512) and a malformed conversation
//   are refused with renderChat's codes on the first next(), before any step (epoch and length unchanged).
import { beforeAll, describe, expect, it } from 'vitest';
import { TextSession, createRuntime, loadModel, renderChat } from '../../src/index.js';
import type { ChatMessage, HostProvider, LoadedModel, Runtime, SessionObserver } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { readGgufFixture, readGgufReference } from '../support/gguf-fixtures.js';
import { readModelFixture } from '../support/models.js';
import { providerCases } from '../support/providers.js';

const TIMEOUT = 180_000;
/** llama.cpp's greedy choices are an oracle where its top two logits are further apart than this. */
const GREEDY_GAP = 0.5;
const IM_END = '<|im_end|>';
const END_OF_TEXT = '<|endoftext|>';

interface GreedyCase {
  readonly prompt: string;
  readonly prompt_ids: readonly number[];
  readonly steps: readonly { readonly top: readonly (readonly [number, number])[] }[];
  readonly generated: readonly number[];
}

const qwenBytes = await readGgufFixture('tiny-qwen2-Q4_K_M.gguf');
const greedy = (await readGgufReference('greedy-llamacpp.json')) as Record<string, GreedyCase[]> | undefined;
const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const HAIKU: readonly ChatMessage[] = [{ role: 'user', content: 'Write a haiku about GPUs.' }];

const pc = providerCases().find((c) => c.kind === 'host')!;

describe.skipIf(qwenBytes === undefined || greedy === undefined)(`chat on ${pc.name}`, () => {
  let provider: HostProvider;
  let runtime: Runtime;
  let qwen: LoadedModel;
  beforeAll(async () => {
    provider = (await pc.make()) as HostProvider;
    runtime = createRuntime(provider);
    qwen = await loadModel(qwenBytes!);
  });

  const session = (observer?: SessionObserver) => TextSession.create({ runtime, model: qwen, maxSeq: 96, maxBatch: 32, ...(observer === undefined ? {} : { observer }) });

  it('[TS-chat-template] the rendered conversation is llama.cpp\'s prompt; the reply streams llama.cpp\'s greedy ids', async () => {
    // The second qwen prompt of the reference is this conversation rendered by the model's template.
    const ref = greedy!['tiny-qwen2-Q4_K_M.gguf']![1]!;
    expect(renderChat(qwen.tokenizer, { messages: HAIKU, add_generation_prompt: true })).toBe(ref.prompt);
    let agreed = 0;
    while (agreed < ref.steps.length && ref.steps[agreed]!.top[0]![1] - ref.steps[agreed]!.top[1]![1] > GREEDY_GAP) agreed++;
    expect(agreed).toBeGreaterThanOrEqual(3);
    const s = await session();
    const ids: number[] = [];
    let text = '';
    for await (const t of s.chat(HAIKU, { maxTokens: agreed })) {
      ids.push(t.token);
      text += t.text;
    }
    expect(s.tokens.slice(0, ref.prompt_ids.length)).toEqual(ref.prompt_ids);
    expect(ids).toEqual(ref.generated.slice(0, agreed));
    expect(s.length).toBe(ref.prompt_ids.length + agreed);
    expect(text).toBe(qwen.tokenizer.decodeAll(ids, { prev: ref.prompt_ids[ref.prompt_ids.length - 1]! }));
    s.dispose();
  }, TIMEOUT);

  it('[TS-chat-stop] the reply stops at each end-of-generation token, which is neither yielded nor committed', async () => {
    const prompt = greedy!['tiny-qwen2-Q4_K_M.gguf']![1]!.prompt_ids;
    for (const stopText of [IM_END, END_OF_TEXT]) {
      const stop = qwen.tokenizer.lookup(stopText)!;
      expect(qwen.endOfGeneration).toContain(stop);
      // After two reply tokens the observer makes the model choose the stop token.
      const observer: SessionObserver = {
        logits: (logits, ctx) => {
          if (ctx.position + ctx.tokens.length < prompt.length + 2) return undefined;
          const forced = new Float32Array(logits.length);
          forced[stop] = 1;
          return forced;
        },
      };
      const s = await session(observer);
      const ids: number[] = [];
      for await (const t of s.chat(HAIKU, { maxTokens: 10 })) ids.push(t.token);
      expect(ids.length).toBe(2);
      expect(ids).not.toContain(stop);
      expect(s.tokens).toEqual([...prompt, ...ids]);
      s.dispose();
    }
  }, TIMEOUT);

  it('[TS-chat-prefix] the next turn prefills only past the prefix it shares with the committed history', async () => {
    const prefills: { position: number; count: number }[] = [];
    const s = await session({ logits: (_, ctx) => void (ctx.tokens.length > 1 && prefills.push({ position: ctx.position, count: ctx.tokens.length })) });
    const reply: number[] = [];
    for await (const t of s.chat(HAIKU, { maxTokens: 3 })) reply.push(t.token);
    const first = s.length - reply.length;
    expect(prefills).toEqual([{ position: 0, count: first }]);
    const next: ChatMessage[] = [...HAIKU, { role: 'assistant', content: qwen.tokenizer.decodeAll(reply) }, { role: 'user', content: 'Again.' }];
    const full = qwen.tokenizer.encode(renderChat(qwen.tokenizer, { messages: next, add_generation_prompt: true }), { parseSpecial: true });
    for await (const t of s.chat(next, { maxTokens: 1 })) expect(t.token).toBeGreaterThanOrEqual(0);
    expect(prefills.length).toBe(2);
    const second = prefills[1]!;
    // The whole first prompt was reused, and the second prefill ran exactly the rest of the new prompt.
    expect(second.position).toBeGreaterThanOrEqual(first);
    expect(second.position + second.count).toBe(full.length);
    expect(s.tokens.slice(0, full.length)).toEqual(full);
    s.dispose();
  }, TIMEOUT);
});

describe.skipIf(stories === undefined || tok512 === undefined || qwenBytes === undefined)(`chat refusals on ${pc.name}`, () => {
  it('[TS-chat-no-template] no template: ENOTSUP no-chat-template; a malformed conversation: EINVAL bad-chat-input; both before any step', async () => {
    const provider = await pc.make();
    const runtime = createRuntime(provider);
    const plain = await TextSession.create({ runtime, model: await loadModel(stories!, { tokenizer: tok512! }), maxSeq: 16, maxBatch: 8 });
    expect(plain.tokenizer.chatTemplate).toBeUndefined();
    await expectCodeAsync(() => plain.chat(HAIKU).next(), 'ENOTSUP', 'no-chat-template');
    expect({ epoch: plain.epoch, length: plain.length, lastOutcome: plain.lastOutcome }).toEqual({ epoch: 0, length: 0, lastOutcome: undefined });
    const qwen = await TextSession.create({ runtime, model: await loadModel(qwenBytes!), maxSeq: 16, maxBatch: 8 });
    await expectCodeAsync(() => qwen.chat([{ content: 'no role' } as unknown as ChatMessage]).next(), 'EINVAL', 'bad-chat-input');
    expect({ epoch: qwen.epoch, length: qwen.length }).toEqual({ epoch: 0, length: 0 });
    plain.dispose();
    qwen.dispose();
  }, TIMEOUT);
});
