// Op suite: qmatmul with F16 weights (shaders/qmatmul_f16*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('F16');
