// Op suite: qmatmul with Q4_1 weights (shaders/qmatmul_q4_1*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('Q4_1');
