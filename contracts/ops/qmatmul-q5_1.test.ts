// Op suite: qmatmul with Q5_1 weights (shaders/qmatmul_q5_1*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('Q5_1');
