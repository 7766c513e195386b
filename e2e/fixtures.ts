// The real model fixtures (../shared/models beside the repository; never copied into it), for specs that
// need them. As in the vitest lanes (contracts/support/models.ts): when they are absent those specs skip,
// unless TENON_REQUIRE_MODELS=1 or CI is set, where their absence is a failure.
import { existsSync } from 'node:fs';

export const MODEL_FIXTURES = ['../shared/models/stories260K.bin', '../shared/models/tok512.bin'];

function fixturesRequired(): boolean {
  const ci = process.env['CI'];
  return process.env['TENON_REQUIRE_MODELS'] === '1' || (ci !== undefined && ci !== '' && ci !== 'false');
}

/** True when the specs that need the fixtures should skip: the fixtures are absent and not required. */
export function skipWithoutModels(): boolean {
  return !fixturesRequired() && !MODEL_FIXTURES.every((f) => existsSync(f));
}

/** The same for GGUF fixtures (../shared/models/gguf/NAME.gz) and references (../shared/models/reference/NAME). */
export function skipWithoutGguf(files: readonly string[]): boolean {
  return !fixturesRequired() && !files.every((f) => existsSync(f.endsWith('.json') ? `../shared/models/reference/${f}` : `../shared/models/gguf/${f}.gz`));
}
