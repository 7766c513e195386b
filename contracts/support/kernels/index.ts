// Kernel module for pool workers in the suites: `kernels` is what a worker registers from it.
import { axpy } from './axpy.js';

export const kernels = [axpy];
