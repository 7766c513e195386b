// Shared setup of the session suites: the stories260K fixture parsed once per file, and per provider case
// a provider + runtime made before the tests and destroyed after them. Use inside a describe block.
import { afterAll, beforeAll } from 'vitest';
import { createRuntime, parseLlamaModel, parseTokenizer } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, Runtime, Tokenizer, WebGPUProvider } from '../../src/index.js';
import { readModelFixture } from './models.js';
import type { ProviderCase } from './providers.js';

export interface ModelFixtureBytes {
  readonly model: Uint8Array | undefined;
  readonly tokenizer: Uint8Array | undefined;
  /** True when either file is missing (the suites then skip, visibly). */
  readonly absent: boolean;
}

export async function stories260K(): Promise<ModelFixtureBytes> {
  const model = await readModelFixture('stories260K.bin');
  const tokenizer = await readModelFixture('tok512.bin');
  return { model, tokenizer, absent: model === undefined || tokenizer === undefined };
}

export interface SessionFixture {
  readonly provider: HostProvider | WebGPUProvider;
  readonly runtime: Runtime;
  readonly model: LlamaModelFile;
  readonly tokenizer: Tokenizer;
}

/** Registers beforeAll/afterAll for one provider case; read the fields inside tests. */
export function useSessionFixture(pc: ProviderCase, bytes: ModelFixtureBytes): SessionFixture {
  const fixture = {} as { -readonly [K in keyof SessionFixture]: SessionFixture[K] };
  beforeAll(async () => {
    fixture.provider = await pc.make();
    fixture.runtime = createRuntime(fixture.provider);
    fixture.model = parseLlamaModel(bytes.model!);
    fixture.tokenizer = parseTokenizer(bytes.tokenizer!, fixture.model.config.vocabSize);
  });
  afterAll(() => {
    if (fixture.provider?.kind === 'webgpu') (fixture.provider as WebGPUProvider).destroy();
  });
  return fixture;
}
