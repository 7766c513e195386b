// Chat template suite (issue 10 "Chat" and acceptance point 1, rendering; both lanes).
// Plan: each model's own `tokenizer.chat_template` (read from the GGUF fixtures) rendered with the
// variables of ../shared/models/reference/chat-template-{qwen,llama3}.json equals the reference Jinja
// rendering (trim_blocks, lstrip_blocks) for every case; the rendered prompt tokenizes with special tokens
// parsed into the model's control tokens. bos_token/eos_token default to the model's own token texts and
// an explicit value wins; other variables reach the template. A tokenizer without a template is ENOTSUP
// 'no-chat-template'; a template that does not parse, one that raises, and malformed input are EINVAL
// with their own reasons; the caller's input is never changed.
import { describe, expect, it } from 'vitest';
import { TokenType, parseTokenizer, renderChat, tokenizerFromGguf } from '../../src/model/index.js';
import type { ChatInput } from '../../src/model/index.js';
import { expectCode } from '../support/expect-error.js';
import { readModelFixture } from '../support/models.js';
import { bpeMetadata, chatReference, fixtureTokenizer, str, u32 } from './tokenizer-fixtures.js';

const qwen = await fixtureTokenizer('tiny-qwen2-Q4_K_M.gguf');
const llama3 = await fixtureTokenizer('llama3-vocab.gguf');
const references = {
  qwen: await chatReference('chat-template-qwen.json'),
  llama3: await chatReference('chat-template-llama3.json'),
};
const tok512 = await readModelFixture('tok512.bin');

describe('rendering equals the reference Jinja output', () => {
  for (const [name, tokenizer, cases] of [
    ['qwen', qwen, references.qwen],
    ['llama3', llama3, references.llama3],
  ] as const) {
    it.skipIf(tokenizer === undefined || cases === undefined)(`[MD-chat-reference] ${name}: every case of chat-template-${name}.json renders exactly`, () => {
      expect(cases!.length).toBeGreaterThanOrEqual(2);
      for (const { rendered, ...input } of cases!) {
        const before = JSON.stringify(input);
        expect(renderChat(tokenizer!, input)).toBe(rendered);
        // The template text itself gives the same result; the input is untouched.
        expect(renderChat(tokenizer!.chatTemplate!, input)).toBe(rendered);
        expect(JSON.stringify(input)).toBe(before);
      }
    });
  }

  it.skipIf(qwen === undefined || references.qwen === undefined)('[MD-chat-reference] the rendered Qwen prompt tokenizes into its control tokens and ends ready for the reply', () => {
    const prompt = renderChat(qwen!, references.qwen![0]!);
    const ids = qwen!.encode(prompt, { parseSpecial: true });
    expect(ids[0]).toBe(151_644);
    expect(ids.filter((id) => id === 151_645)).toHaveLength(1);
    expect(qwen!.decodeAll(ids, { special: true })).toBe(prompt);
    expect(qwen!.decodeAll(ids.slice(-3))).toBe('assistant\n');
  });
});

describe('variables', () => {
  const messages = [{ role: 'user', content: 'Hi' }];

  it.skipIf(llama3 === undefined)("[MD-chat-defaults] bos_token defaults to the model's own BOS text; an explicit one wins", () => {
    expect(renderChat(llama3!, { messages })).toBe('<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n');
    expect(renderChat(llama3!, { messages, bos_token: '<BOS>' }).startsWith('<BOS><|start_header_id|>')).toBe(true);
  });

  it('[MD-chat-defaults] add_generation_prompt defaults to false; eos_token and any other variable reach the template', () => {
    const template = '{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}{% if add_generation_prompt %}<gen>{% endif %}{{ eos_token }}|{{ extra }}|{{ tools | length }}';
    expect(renderChat(template, { messages, tools: [] })).toBe('[user:Hi]||0');
    expect(renderChat(template, { messages, add_generation_prompt: true, eos_token: '</s>', extra: 'x', tools: [{ name: 'a' }, { name: 'b' }] })).toBe('[user:Hi]<gen></s>|x|2');
  });

  it("[MD-chat-defaults] bos_token and eos_token default to the texts of the vocabulary's own BOS and EOS tokens", () => {
    const meta = bpeMetadata({
      specials: [
        { text: '<|start|>', type: TokenType.Control },
        { text: '<|stop|>', type: TokenType.Control },
      ],
      extra: { 'tokenizer.ggml.bos_token_id': u32(256), 'tokenizer.ggml.eos_token_id': u32(257), 'tokenizer.chat_template': str('{{ bos_token }}{{ messages[0].content }}{{ eos_token }}') },
    });
    const t = tokenizerFromGguf(meta);
    expect(renderChat(t, { messages })).toBe('<|start|>Hi<|stop|>');
    expect(renderChat(t, { messages, eos_token: '.' })).toBe('<|start|>Hi.');
  });

  it('[MD-chat-defaults] trim_blocks and lstrip_blocks: block tags leave no newline or indentation behind', () => {
    const template = '{% for m in messages %}\n    {% if m.role == "user" %}\n  U:{{ m.content }}\n    {% endif %}\n{% endfor %}';
    expect(renderChat(template, { messages: [...messages, { role: 'user', content: 'Yo' }] })).toBe('  U:Hi\n  U:Yo\n');
  });
});

describe('errors', () => {
  const messages = [{ role: 'user', content: 'Hi' }];

  it.skipIf(tok512 === undefined)('[MD-chat-errors] a model without a chat template is ENOTSUP no-chat-template', () => {
    const t = parseTokenizer(tok512!, 512);
    expect(t.chatTemplate).toBeUndefined();
    expectCode(() => renderChat(t, { messages }), 'ENOTSUP', 'no-chat-template');
  });

  it('[MD-chat-errors] a template that does not parse is EINVAL bad-chat-template; one that raises is EINVAL chat-template-error', () => {
    expectCode(() => renderChat('{% for m in messages %}{{ m.role }', { messages }), 'EINVAL', 'bad-chat-template');
    expectCode(() => renderChat('{% if messages|length > 0 %}{{ raise_exception("no") }}{% endif %}', { messages }), 'EINVAL', 'chat-template-error');
  });

  it('[MD-chat-errors] malformed input is EINVAL bad-chat-input naming the field, before anything renders', () => {
    const template = '{{ messages | length }}';
    expect(expectCode(() => renderChat(template, { messages: 'hi' } as unknown as ChatInput), 'EINVAL', 'bad-chat-input').ids).toEqual({ field: 'messages' });
    expect(expectCode(() => renderChat(template, { messages: [{ content: 'x' }] } as unknown as ChatInput), 'EINVAL', 'bad-chat-input').ids).toEqual({ field: 'messages[0].role' });
    expect(expectCode(() => renderChat(template, { messages: [null] } as unknown as ChatInput), 'EINVAL', 'bad-chat-input').ids).toEqual({ field: 'messages[0]' });
    expect(expectCode(() => renderChat(template, { messages, bos_token: 1 } as unknown as ChatInput), 'EINVAL', 'bad-chat-input').ids).toEqual({ field: 'bos_token' });
    expect(expectCode(() => renderChat(template, { messages, add_generation_prompt: 'yes' } as unknown as ChatInput), 'EINVAL', 'bad-chat-input').ids).toEqual({ field: 'add_generation_prompt' });
    expectCode(() => renderChat(42 as unknown as string, { messages }), 'EINVAL', 'bad-argument');
    // Control: the same template renders good input.
    expect(renderChat(template, { messages })).toBe('1');
  });
});
