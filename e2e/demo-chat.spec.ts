// Plan: the built demo (dist/demo, served byte for byte under /static/) with real GGUF and its model picker,
// as a user meets it, offline. Each test starts from an empty browser profile (fresh OPFS).
//   - tiny-qwen2-Q4_K_M.gguf by URL (the e2e server serves the gzip-stored fixture decompressed at
//     /models/gguf/tiny-qwen2-Q4_K_M.gguf, as a model hub serves a .gguf) opens the chat view; a message is
//     sent through the model's chat template: the prompt ids the worker committed equal llama.cpp's ids of
//     the reference rendering, and the reply's first tokens equal llama.cpp's greedy ids where its top-two
//     gap exceeds 0.5 (reference/greedy-llamacpp.json); the reply streams token by token; when the model
//     chooses <|im_end|> (made its choice at step 5 through the session's logits observer, the demo's test
//     seam) the reply stops there and the token is never shown; the stop button ends a long reply; the
//     memory panel lists the lowering kinds with their bytes; a reload loads the model from OPFS with no
//     request for it and the first reply is the same; the worker read the model from its OPFS blob by
//     ranges, never the whole file at once. Screenshot: test-results/demo-chat.png.
//   - with no address parameters the demo loads its embedded stories260K (no request outside the demo's
//     own files) and generates llama2.c's greedy continuation; the picker offers the instruct models by
//     their public GGUF URLs.
import { readFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import type { BrowserContext, Page } from '@playwright/test';
import { skipWithoutGguf, skipWithoutModels } from './fixtures.js';

const DEMO = '/static/dist/demo/index.html';
const QWEN_PATH = '/models/gguf/tiny-qwen2-Q4_K_M.gguf';
const LOAD_TIMEOUT = 60_000;
const REPLY_TIMEOUT = 90_000;
/** Qwen's end of turn. */
const IM_END = 151645;
/** The reply step at which the test seam makes the model choose <|im_end|>. */
const FORCED_STEP = 5;
/** The gap between llama.cpp's top two logits above which its greedy choice is a fair oracle (README). */
const FAIR_GAP = 0.5;

interface GreedyCase {
  prompt: string;
  prompt_ids: number[];
  generated: number[];
  steps: { top: [number, number][] }[];
}

interface ChatReport {
  ids: number[];
  text: string;
  result?: { promptIds: number[]; renderedPrompt: string; ids: number[]; stop: string; reused: number; promptTokens: number };
  error?: { code: string; reason?: string };
}

interface DemoWindow {
  tenonDemo: {
    lastChat: ChatReport | undefined;
    lastRun: { ids: number[]; text: string } | undefined;
    lastLoad: { fromCache: boolean; model: { format: string; architecture: string; chat: boolean; fileBytes: number; reads: { count: number; bytes: number; largest: number } } } | undefined;
    streamed: number[];
    faults: { forceToken(f: { step: number; token: number }): Promise<void> };
  };
}

test.skip(skipWithoutGguf(['tiny-qwen2-Q4_K_M.gguf', 'greedy-llamacpp.json', 'chat-template-qwen.json']), 'the GGUF fixtures in ../shared/models are absent');

/** llama.cpp's run of the chat prompt on tiny-qwen2 (the haiku message of chat-template-qwen.json). */
function reference(): { greedy: GreedyCase; rendered: string; message: string } {
  const greedy = (JSON.parse(readFileSync('../shared/models/reference/greedy-llamacpp.json', 'utf8')) as Record<string, GreedyCase[]>)['tiny-qwen2-Q4_K_M.gguf']!;
  const chats = JSON.parse(readFileSync('../shared/models/reference/chat-template-qwen.json', 'utf8')) as { messages: { role: string; content: string }[]; rendered: string }[];
  const chat = chats.find((c) => c.messages.length === 1)!;
  const run = greedy.find((g) => g.prompt === chat.rendered)!;
  return { greedy: run, rendered: chat.rendered, message: chat.messages[0]!.content };
}

/** The greedy ids llama.cpp's logits decide fairly: every step up to (not including) the first close call. */
function fairPrefix(run: GreedyCase): number[] {
  const out: number[] = [];
  for (let i = 0; i < run.steps.length; i++) {
    const [a, b] = run.steps[i]!.top;
    if (a![1] - b![1] <= FAIR_GAP) break;
    out.push(run.generated[i]!);
  }
  return out;
}

function modelRequests(context: BrowserContext, path: string): { count: number } {
  const counter = { count: 0 };
  context.on('request', (r) => {
    if (new URL(r.url()).pathname === path) counter.count++;
  });
  return counter;
}

async function openReady(page: Page, params: string): Promise<void> {
  await page.goto(`${DEMO}${params}`);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: LOAD_TIMEOUT });
}

/** Types a message, sends it and waits for the reply to end; returns the page's report of it. */
async function send(page: Page, text: string): Promise<ChatReport> {
  await page.evaluate(() => {
    (window as unknown as DemoWindow).tenonDemo.lastChat = undefined;
  });
  await page.fill('#chat-input', text);
  await page.click('#send');
  return waitReply(page);
}

async function waitReply(page: Page): Promise<ChatReport> {
  await page.waitForFunction(() => {
    const d = window as unknown as DemoWindow;
    return d.tenonDemo.lastChat !== undefined && document.body.dataset['state'] !== 'generating';
  }, undefined, { timeout: REPLY_TIMEOUT });
  return page.evaluate(() => (window as unknown as DemoWindow).tenonDemo.lastChat!);
}

test('[SHIP-demo-chat] tiny-qwen2 (GGUF by URL) chats in the built demo: template applied, greedy reply streamed, stop at <|im_end|>, stop button, kinds in the memory panel; a reload loads it from OPFS with no request', async ({ page }, testInfo) => {
  test.setTimeout(300_000);
  const ref = reference();
  const fair = fairPrefix(ref.greedy);
  expect(fair.length, 'precondition: llama.cpp decides at least the first reply tokens fairly').toBeGreaterThanOrEqual(2);
  expect(fair.length).toBeLessThan(FORCED_STEP);
  const requests = modelRequests(page.context(), QWEN_PATH);

  await openReady(page, `?model=${QWEN_PATH}`);
  expect(requests.count).toBe(1);
  await expect(page.locator('#load-status')).toHaveAttribute('data-source', 'network');
  await expect(page.locator('body')).toHaveAttribute('data-view', 'chat');
  await expect(page.locator('#chat-view')).toBeVisible();
  await expect(page.locator('#completion-view')).toBeHidden();
  const load = await page.evaluate(() => (window as unknown as DemoWindow).tenonDemo.lastLoad!);
  expect(load.model).toMatchObject({ format: 'gguf', architecture: 'qwen2', chat: true });
  // The worker read the 37 MiB model from its OPFS blob by ranges (header, weights by rows, the identity
  // digest tensor by tensor): most of the file, in many reads, never the whole file in one.
  expect(load.model.fileBytes).toBe(38_793_760);
  expect(load.model.reads.bytes).toBeGreaterThan(load.model.fileBytes / 2);
  expect(load.model.reads.count).toBeGreaterThan(2);
  expect(load.model.reads.largest).toBeLessThan(load.model.fileBytes);
  await expect(page.locator('#adapter')).toContainText('GGUF, qwen2');
  // The memory panel: the lowering kinds of a Q4_K_M file, each with its bytes on the device.
  await expect(page.locator('#weight-kinds')).toHaveAttribute('data-kinds', /Q4_K/);
  for (const kind of ['Q4_K', 'Q6_K', 'F32']) {
    const row = page.locator(`#weight-kinds tr[data-kind="${kind}"]`);
    await expect(row).toHaveCount(1);
    expect(Number(await row.getAttribute('data-device-bytes'))).toBeGreaterThan(0);
  }

  // Turn 1: the reference conversation; the model is made to end its turn at step 5.
  await page.evaluate((step) => (window as unknown as DemoWindow).tenonDemo.faults.forceToken({ step, token: 151645 }), FORCED_STEP);
  const first = await send(page, ref.message);
  expect(first.error).toBeUndefined();
  const r1 = first.result!;
  expect(r1.renderedPrompt).toBe(ref.rendered);
  expect(r1.promptIds).toEqual(ref.greedy.prompt_ids);
  expect(first.ids.slice(0, fair.length)).toEqual(fair);
  expect(r1.stop).toBe('end-of-generation');
  expect(first.ids.length).toBe(FORCED_STEP - 1);
  expect(first.ids).not.toContain(IM_END);
  const reply = page.locator('#messages .msg.assistant').last();
  await expect(reply.locator('.body')).toHaveText(first.text);
  await expect(reply).toHaveAttribute('data-stop', 'end-of-generation');
  await expect(page.locator('#messages .msg.user')).toHaveText([`user${ref.message}`]);
  await expect(page.locator('#chat-stats')).toContainText('the model ended its turn');
  const shot = 'test-results/demo-chat.png';
  await page.screenshot({ path: shot, fullPage: true });
  await testInfo.attach('demo chat with tiny-qwen2', { path: shot, contentType: 'image/png' });

  // Turn 2: a long reply streams token by token (tokens shown while the run goes on); Stop ends it.
  await page.fill('#chat-max-tokens', '400');
  await page.evaluate(() => {
    (window as unknown as DemoWindow).tenonDemo.lastChat = undefined;
  });
  await page.fill('#chat-input', 'Bye');
  await page.click('#send');
  await page.waitForFunction(() => (window as unknown as DemoWindow).tenonDemo.streamed.length >= 3 && document.body.dataset['state'] === 'generating', undefined, { timeout: REPLY_TIMEOUT });
  await expect(page.locator('#messages .msg.assistant').last()).toHaveAttribute('data-streaming', 'true');
  expect((await page.locator('#messages .msg.assistant .body').last().textContent())!.length).toBeGreaterThan(0);
  await page.click('#stop');
  const second = await waitReply(page);
  expect(second.error).toBeUndefined();
  expect(second.result!.stop).toBe('stopped');
  expect(second.ids.length).toBeGreaterThanOrEqual(3);
  expect(second.ids.length).toBeLessThan(400);
  // The second prompt is the whole conversation, the first reply included, through the template; its ids
  // start with the first prompt's.
  expect(second.result!.renderedPrompt).toBe(`${ref.rendered}${first.text}<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n`);
  expect(second.result!.promptIds.slice(0, r1.promptIds.length)).toEqual(r1.promptIds);
  expect(second.result!.reused).toBeGreaterThanOrEqual(r1.promptIds.length);
  await expect(page.locator('#messages .msg')).toHaveCount(4);

  // A reload: the model comes from OPFS, with no request for it; a new conversation replies the same.
  await page.reload();
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: LOAD_TIMEOUT });
  await expect(page.locator('#load-status')).toHaveAttribute('data-source', 'opfs');
  expect(await page.evaluate(() => (window as unknown as DemoWindow).tenonDemo.lastLoad?.fromCache)).toBe(true);
  expect(requests.count).toBe(1);
  await page.evaluate((step) => (window as unknown as DemoWindow).tenonDemo.faults.forceToken({ step, token: 151645 }), FORCED_STEP);
  const again = await send(page, ref.message);
  expect(again.result!.promptIds).toEqual(ref.greedy.prompt_ids);
  expect(again.ids).toEqual(first.ids);
  expect(requests.count).toBe(1);
});

test('[SHIP-demo-embedded] with no address parameters the demo loads its embedded stories260K offline and generates llama2.c\'s greedy story; the picker offers the instruct models by URL', async ({ page }, testInfo) => {
  test.skip(skipWithoutModels(), 'the stories260K fixtures are absent');
  const origin = new URL(testInfo.project.use.baseURL!).origin;
  const outside: string[] = [];
  page.context().on('request', (r) => {
    const url = new URL(r.url());
    if (url.origin !== origin || !url.pathname.startsWith('/static/dist/demo/')) outside.push(r.url());
  });
  await page.goto(`${DEMO}?maxTokens=10&promptCache=0`);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: LOAD_TIMEOUT });
  await expect(page.locator('#model-pick')).toHaveValue('stories260k');
  await expect(page.locator('body')).toHaveAttribute('data-view', 'completion');
  await expect(page.locator('#weight-kinds tr[data-kind="F32"]')).toHaveCount(1);
  await page.click('#generate');
  await page.waitForFunction(() => (window as unknown as DemoWindow).tenonDemo.lastRun !== undefined && document.body.dataset['state'] !== 'generating', undefined, { timeout: LOAD_TIMEOUT });
  const run = await page.evaluate(() => (window as unknown as DemoWindow).tenonDemo.lastRun!);
  expect(run.ids).toEqual([432, 383, 286, 261, 376, 298, 315, 421, 395, 317]);
  expect(outside).toEqual([]);
  const options = await page.locator('#model-pick option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  expect(options).toEqual(['stories260k', 'stories15m', 'smollm2-360m-q8_0', 'qwen2.5-0.5b-q4_k_m', 'llama3.2-1b-q4_k_m', 'custom']);
  const urls: Record<string, string> = {
    'smollm2-360m-q8_0': 'https://huggingface.co/HuggingFaceTB/SmolLM2-360M-Instruct-GGUF/resolve/main/smollm2-360m-instruct-q8_0.gguf',
    'qwen2.5-0.5b-q4_k_m': 'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf',
    'llama3.2-1b-q4_k_m': 'https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_K_M.gguf',
  };
  for (const [id, url] of Object.entries(urls)) {
    await page.selectOption('#model-pick', id);
    await expect(page.locator('#model-url')).toHaveValue(url);
    await expect(page.locator('#tokenizer-url')).toHaveValue('');
  }
  expect(outside).toEqual([]);
});
