// Op suite: qmatmul with Q6_K weights (shaders/qmatmul_q6_k*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('Q6_K');
