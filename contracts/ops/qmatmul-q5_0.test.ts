// Op suite: qmatmul with Q5_0 weights (shaders/qmatmul_q5_0*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('Q5_0');
