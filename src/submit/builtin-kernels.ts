// Kernels every pool worker knows without loading a module: the whole op library.
import type { Kernel } from './kernel.js';
import { OPS } from './ops/index.js';

export const builtinKernels: readonly Kernel<never>[] = Object.values(OPS) as readonly Kernel<never>[];
