// Op suite: qmatmul with F32 weights (shaders/qmatmul_f32*.wgsl); the plan is in qmatmul-suite.ts.
import { describeQMatmul } from './qmatmul-suite.js';

describeQMatmul('F32');
