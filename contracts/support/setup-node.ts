// Node lane setup: installs Dawn's WebGPU globals (GPUBufferUsage, GPUMapMode, ...) and publishes a GPU
// entry point where the suites look for it. The Dawn instance is created lazily, on first use, so test
// files that never touch the GPU (pool workers, pure logic) never load a device into their process.
// Runs once per test file process (forks pool).
// In the mutant runner's lanes, properties that do not use fcParams stop at their first failure too
// (contracts/support/fc.ts).
import fc from 'fast-check';
import { inject } from 'vitest';
import { create, globals } from 'webgpu';

if (inject('tenonFcEndOnFailure') === true) fc.configureGlobal({ ...fc.readConfigureGlobal(), endOnFailure: true });

Object.assign(globalThis, globals);
let instance: GPU | undefined;
Object.defineProperty(globalThis, '__tenonNodeGPU', {
  configurable: true,
  get(): GPU {
    instance ??= create([]);
    return instance;
  },
});
