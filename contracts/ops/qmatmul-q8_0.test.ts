// Op suite: qmatmul with Q8_0 weights (shaders/qmatmul_q8_0*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('Q8_0');
