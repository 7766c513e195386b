// Node lane setup: installs Dawn's WebGPU globals (GPUBufferUsage, GPUMapMode, ...) and publishes a GPU
// entry point where the suites look for it. Runs once per test file process (forks pool).
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
(globalThis as { __tenonNodeGPU?: GPU }).__tenonNodeGPU = create([]);
