// Plan: the CLI's provider default, as a user runs it (the built dist/workers/tenon.js in a child Node
// process, with Dawn on SwiftShader as in every node lane here). `tenon generate` without --provider runs
// auto: it picks the host provider, --json says so with the reason and the adapter it looked at, and the
// greedy ids equal a forced host run; without --verbose stderr stays empty, with it one line names the
// choice and its reason. --provider webgpu still runs on Dawn (reason forced); an unknown value is a usage
// error (exit 2); the usage text lists auto as the default.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../src/cli/args.js';
import { readModelFixture } from '../support/models.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const cli = fileURLToPath(new URL('../../dist/workers/tenon.js', import.meta.url));
const model = fileURLToPath(new URL('../../../shared/models/stories260K.bin', import.meta.url));
const tokenizer = fileURLToPath(new URL('../../../shared/models/tok512.bin', import.meta.url));
const absent = (await readModelFixture('stories260K.bin')) === undefined;
/** llama2.c's greedy continuation of "Once upon a time" for the fixture (as contracts/session/cli.node.test.ts). */
const GREEDY = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];

function run(args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: repo, encoding: 'utf8', env: process.env, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const base = ['generate', '--model', model, '--tokenizer', tokenizer, '--prompt', 'Once upon a time', '--steps', '10', '--json'];

interface Generated {
  provider: string;
  providerSelection: { requested: string; kind: string; reason: string; message: string; adapter?: { architecture: string; software: boolean } };
  adapter: { architecture: string } | null;
  generatedIds: number[];
}

describe('tenon generate --provider (auto by default)', () => {
  it('[SHIP-cli-provider-auto] the default is auto, and the usage says so', () => {
    const args = parseArgs(['generate', '--model', 'm', '--prompt', 'p']);
    expect(args.command === 'generate' && args.provider).toBe('auto');
    expect(args.command === 'generate' && args.verbose).toBe(false);
    const forced = parseArgs(['generate', '--model', 'm', '--prompt', 'p', '--provider', 'webgpu', '--verbose']);
    expect(forced.command === 'generate' && [forced.provider, forced.verbose]).toEqual(['webgpu', true]);
    const bad = run(['generate', '--model', model, '--prompt', 'p', '--provider', 'gpu']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('auto|webgpu|host');
  });

  it.skipIf(absent)('[SHIP-cli-provider-auto] without --provider on SwiftShader: the host provider, the reason and adapter in --json, the greedy ids, nothing on stderr', () => {
    const r = run(base);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as Generated;
    expect(out.provider).toBe('host');
    expect(out.adapter).toBeNull();
    expect(out.providerSelection).toMatchObject({ requested: 'auto', kind: 'host', reason: 'fallback-adapter', adapter: { architecture: 'swiftshader', software: true } });
    expect(out.generatedIds).toEqual(GREEDY);
    const host = JSON.parse(run([...base, '--provider', 'host']).stdout) as Generated;
    expect(host.providerSelection).toMatchObject({ requested: 'host', kind: 'host', reason: 'forced' });
    expect(host.generatedIds).toEqual(out.generatedIds);
  });

  it.skipIf(absent)('[SHIP-cli-provider-auto] --verbose prints one stderr line with the choice and its reason', () => {
    const r = run([...base, '--verbose']);
    expect(r.status).toBe(0);
    const lines = r.stderr.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^tenon: --provider auto: host provider: .*swiftshader.* \(reason fallback-adapter\)$/);
    expect((JSON.parse(r.stdout) as Generated).provider).toBe('host');
  });

  it.skipIf(absent)('[SHIP-cli-provider-auto] --provider webgpu still runs on Dawn, reason forced, with the same ids', () => {
    const r = run([...base, '--provider', 'webgpu']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as Generated;
    expect(out.provider).toBe('webgpu');
    expect(out.adapter?.architecture).toBe('swiftshader');
    expect(out.providerSelection).toMatchObject({ requested: 'webgpu', kind: 'webgpu', reason: 'forced', adapter: { software: true } });
    expect(out.generatedIds).toEqual(GREEDY);
  });
});
