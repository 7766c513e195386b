// Op suite: qmatmul with Q4_K weights (shaders/qmatmul_q4_k*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('Q4_K');
