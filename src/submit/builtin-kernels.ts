// Kernels every pool worker knows without loading a module: the op library (filled in as ops land).
import type { Kernel } from './kernel.js';

export const builtinKernels: readonly Kernel<never>[] = [];
