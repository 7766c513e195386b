// Chat templates (DESIGN.md "src/model"): a model's `tokenizer.chat_template` rendered with
// @huggingface/jinja, taking the variables Hugging Face's `apply_chat_template` takes (`messages`,
// `add_generation_prompt`, `bos_token`, `eos_token`, `tools`, and any other the template reads).
//
// Contract: `renderChat(source, input)` validates the input before rendering (EINVAL 'bad-chat-input'
// naming the field), renders synchronously and returns the prompt text; it never changes `input`.
// `source` is a Tokenizer (its template; bos_token/eos_token default to the text of its own BOS/EOS
// tokens; a vocabulary without a template is ENOTSUP 'no-chat-template') or a template string. A template
// that does not parse is EINVAL 'bad-chat-template'; one that fails while rendering (including its own
// raise_exception) is EINVAL 'chat-template-error'. The Jinja environment trims blocks (trim_blocks and
// lstrip_blocks on, as transformers renders templates). Parsed templates are cached per template text.
// The renderer converts the variables into its own values, so a template never reaches the caller's
// objects. The turn's stop tokens are the tokenizer's `endOfGeneration` (eos, eot, eom and the well-known
// end-of-turn tokens such as `<|im_end|>` and `<|eot_id|>`).
import { Template } from '@huggingface/jinja';
import { TenonError } from '../errors.js';
import type { Tokenizer } from './tokenizer/types.js';

const OP = 'model.renderChat';
/** Distinct template texts kept parsed. */
const TEMPLATE_CACHE_ENTRIES = 16;

export interface ChatMessage {
  readonly role: string;
  /** Text, or null/absent (e.g. an assistant turn that only calls tools), or structured content parts. */
  readonly content?: unknown;
  readonly [field: string]: unknown;
}

/** The variables of one rendering, as `apply_chat_template` takes them. */
export interface ChatInput {
  readonly messages: readonly ChatMessage[];
  /** End with the header of an assistant turn (default false, as in transformers). */
  readonly add_generation_prompt?: boolean;
  readonly bos_token?: string;
  readonly eos_token?: string;
  readonly [variable: string]: unknown;
}

const templates = new Map<string, Template>();

function bad(reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, ids === undefined ? { op: OP, reason } : { op: OP, reason, ids });
}

function compile(template: string): Template {
  let parsed = templates.get(template);
  if (parsed !== undefined) return parsed;
  try {
    parsed = new Template(template);
  } catch (err) {
    bad('bad-chat-template', `the chat template does not parse: ${(err as Error).message}`);
  }
  if (templates.size >= TEMPLATE_CACHE_ENTRIES) templates.delete(templates.keys().next().value!);
  templates.set(template, parsed);
  return parsed;
}

function isTokenizer(source: unknown): source is Tokenizer {
  return typeof source === 'object' && source !== null && typeof (source as Tokenizer).tokenText === 'function' && 'chatTemplate' in source;
}

function checkInput(input: ChatInput): void {
  if (typeof input !== 'object' || input === null) bad('bad-chat-input', 'the chat input must be an object', { field: 'input' });
  if (!Array.isArray(input.messages)) bad('bad-chat-input', 'messages must be an array', { field: 'messages' });
  input.messages.forEach((m: unknown, i) => {
    if (typeof m !== 'object' || m === null) bad('bad-chat-input', `message ${i} is not an object`, { field: `messages[${i}]` });
    if (typeof (m as ChatMessage).role !== 'string') bad('bad-chat-input', `message ${i} has no string role`, { field: `messages[${i}].role` });
  });
  for (const field of ['bos_token', 'eos_token'] as const) {
    if (input[field] !== undefined && typeof input[field] !== 'string') bad('bad-chat-input', `${field} must be a string`, { field });
  }
  if (input.add_generation_prompt !== undefined && typeof input.add_generation_prompt !== 'boolean') bad('bad-chat-input', 'add_generation_prompt must be a boolean', { field: 'add_generation_prompt' });
}

/** Renders a chat template (see the contract above). */
export function renderChat(source: Tokenizer | string, input: ChatInput): string {
  let template: string;
  const defaults: Record<string, unknown> = {};
  if (typeof source === 'string') template = source;
  else if (isTokenizer(source)) {
    if (source.chatTemplate === undefined) throw new TenonError('ENOTSUP', 'the model has no chat template (tokenizer.chat_template)', { op: OP, reason: 'no-chat-template' });
    template = source.chatTemplate;
    if (source.special.bos !== undefined) defaults['bos_token'] = source.tokenText(source.special.bos);
    if (source.special.eos !== undefined) defaults['eos_token'] = source.tokenText(source.special.eos);
  } else return bad('bad-argument', 'expected a Tokenizer or a template string');
  checkInput(input);
  const compiled = compile(template);
  const variables: Record<string, unknown> = { add_generation_prompt: false, ...defaults };
  for (const [key, value] of Object.entries(input)) if (value !== undefined) variables[key] = value;
  try {
    return compiled.render(variables);
  } catch (err) {
    return bad('chat-template-error', `the chat template failed: ${(err as Error).message}`);
  }
}
