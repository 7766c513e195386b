// Node lane setup: installs Dawn's WebGPU globals (GPUBufferUsage, GPUMapMode, ...) and publishes a GPU
// entry point where the suites look for it. The Dawn instance is created lazily, on first use: measured
// here with webgpu 0.6.2, a Dawn instance on the main thread makes GPU work inside a worker_threads
// worker crash the whole process, so suites that run GPU jobs in pool workers must not create one.
// Runs once per test file process (forks pool).
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
let instance: GPU | undefined;
Object.defineProperty(globalThis, '__tenonNodeGPU', {
  configurable: true,
  get(): GPU {
    instance ??= create([]);
    return instance;
  },
});
