// Plan: the `tenon` CLI as a user runs it (the built dist/workers/tenon.js in a child Node process): greedy
// generation of the stories260K fixture prints the known ids with --json on Dawn and on the host
// provider; bad usage exits 2 and a missing file exits 1 with a coded message.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readModelFixture } from '../support/models.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const cli = fileURLToPath(new URL('../../dist/workers/tenon.js', import.meta.url));
const model = fileURLToPath(new URL('../../../shared/models/stories260K.bin', import.meta.url));
const tokenizer = fileURLToPath(new URL('../../../shared/models/tok512.bin', import.meta.url));
const absent = (await readModelFixture('stories260K.bin')) === undefined;

function run(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: repo, encoding: 'utf8', env: process.env, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('tenon CLI', () => {
  for (const provider of ['webgpu', 'host'] as const) {
    it.skipIf(absent)(`[TS-cli-json] generate --json on ${provider} prints the prompt ids and llama2.c's greedy ids`, () => {
      const r = run(['generate', '--model', model, '--tokenizer', tokenizer, '--prompt', 'Once upon a time', '--steps', '10', '--provider', provider, '--json']);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout) as { promptIds: number[]; generatedIds: number[]; text: string; provider: string };
      expect(out.provider).toBe(provider);
      expect(out.promptIds).toEqual([1, 403, 407, 261, 378]);
      expect(out.generatedIds).toEqual([432, 383, 286, 261, 376, 298, 315, 421, 395, 317]);
      expect(out.text).toBe(', there was a little girl named Lily');
    });
  }

  it('[TS-cli-json] bad usage exits 2; an unreadable model exits 1 with its code', () => {
    const usage = run(['generate', '--model', 'x']);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('usage: tenon generate');
    const missing = run(['generate', '--model', '/nonexistent.bin', '--tokenizer', '/nonexistent.tok', '--prompt', 'a', '--steps', '1', '--provider', 'host']);
    expect(missing.status).toBe(1);
    expect(missing.stderr.startsWith('tenon: ')).toBe(true);
  });
});
