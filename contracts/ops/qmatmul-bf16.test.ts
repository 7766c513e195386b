// Op suite: qmatmul with BF16 weights (shaders/qmatmul_bf16*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('BF16');
