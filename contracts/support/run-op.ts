// Test-support runner for the op library: runs one OpDef once on a WebGPUProvider over tenon tensors,
// the way a compiled graph will (bindings from prepared device access covering each tensor's whole
// claim, element offsets in the uniform params), but without graphs, groups or retirement records.
//
// Ownership: the caller keeps its tensors; the runner holds one prepared access per tensor (shared for
// `read` bindings, exclusive for `read_write`) only until the dispatch has completed, then releases
// them. It creates one uniform buffer and one bind group per run and destroys the buffer before
// returning (also on failure). Pipelines are cached per device and shader+constants (they have no
// destroy; they go with the device). Not for production: it waits for completion on every run.
import { TenonError } from '../../src/index.js';
import type { AnyTypedArray, DType, PreparedDeviceRead, PreparedDeviceWrite, Tensor, WebGPUProvider } from '../../src/index.js';
import type { OpConstants, OpDef, OpLimits, OpOperand } from '../../src/submit/ops/index.js';

const pipelines = new WeakMap<GPUDevice, Map<string, GPUComputePipeline>>();

function pipelineFor(device: GPUDevice, shader: string, constants: OpConstants): GPUComputePipeline {
  let cache = pipelines.get(device);
  if (cache === undefined) {
    cache = new Map();
    pipelines.set(device, cache);
  }
  const key = `${JSON.stringify(constants)}\n${shader}`;
  let pipeline = cache.get(key);
  if (pipeline === undefined) {
    const module = device.createShaderModule({ code: shader });
    pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main', constants: { ...constants } } });
    cache.set(key, pipeline);
  }
  return pipeline;
}

/** What check() sees of a tensor. */
export function operandOf(tensor: Tensor<DType>): OpOperand {
  return { dtype: tensor.dtype, shape: tensor.shape, contiguous: tensor.isContiguous };
}

export interface RunOpOptions {
  /**
   * Limits handed to `op.workgroups` instead of the device's (tests pass a tiny
   * maxComputeWorkgroupsPerDimension to exercise folding into y on small shapes).
   */
  readonly limits?: OpLimits;
}

/**
 * Checks, binds, dispatches and waits for one op. Throws the op's TenonError (nothing prepared, nothing
 * created) for bad operands or params, and EIO when the device reports a validation error.
 */
export async function runOp<P, A extends readonly AnyTypedArray[]>(
  provider: WebGPUProvider,
  op: OpDef<P, A>,
  tensors: readonly Tensor<DType>[],
  params: P,
  options: RunOpOptions = {},
): Promise<void> {
  op.check(tensors.map(operandOf), params);
  const device = provider.device;
  const prepared: (PreparedDeviceRead | PreparedDeviceWrite)[] = [];
  let uniform: GPUBuffer | undefined;
  try {
    op.bindings.forEach((binding, i) => {
      const tensor = tensors[i]!;
      prepared.push(binding.access === 'read' ? tensor.prepareDevice() : tensor.prepareDeviceMut());
    });
    const bytes = op.params(params, prepared.map((p) => p.elementOffset));
    const constants = op.constants(params);
    const [x, y, z] = op.workgroups(params, options.limits ?? device.limits);
    device.pushErrorScope('validation');
    let error: GPUError | null;
    try {
      const pipeline = pipelineFor(device, op.shader, constants);
      uniform = device.createBuffer({ size: op.paramsBytes, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(uniform, 0, bytes);
      const bindGroup = device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          ...prepared.map((p, binding) => ({ binding, resource: p.binding() })),
          { binding: prepared.length, resource: { buffer: uniform } },
        ],
      });
      const encoder = device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindGroup);
      pass.dispatchWorkgroups(x, y, z);
      pass.end();
      device.queue.submit([encoder.finish()]);
    } finally {
      error = await device.popErrorScope();
    }
    await device.queue.onSubmittedWorkDone();
    if (error !== null) throw new TenonError('EIO', error.message, { op: `runOp.${op.name}`, reason: 'gpu-validation', cause: error });
  } finally {
    uniform?.destroy();
    for (const p of prepared) p.release();
  }
}
