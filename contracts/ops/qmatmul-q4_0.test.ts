// Op suite: qmatmul with Q4_0 weights (shaders/qmatmul_q4_0*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('Q4_0');
