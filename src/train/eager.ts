// Eager dispatch for the tape: runs one op-library kernel (src/submit/ops OpDef) at once over borrowed
// inputs and one fresh output owner, on the host (the op's host reference over zero-copy prepared arrays)
// or on WebGPU (the op's WGSL, bindings from prepared device access).
//
// Ownership: inputs are shared views the caller owns and keeps; `out` is an owner the caller allocated
// (with the allocation reason it wants in the ledger) and keeps. Every prepared access taken here is held
// until the work is done (host: the call returns; WebGPU: queue.onSubmittedWorkDone resolved) and released
// before returning, also on failure. On WebGPU one uniform buffer per dispatch is created and destroyed
// here; pipelines are cached per device (they go with the device). A device lost while the work was in
// flight makes the call throw ENODEV; the caller's tensors stay owned by the caller.
// Thread: the provider's.
import { TenonError } from '../errors.js';
import { WebGPUProvider } from '../storage/index.js';
import type { AnyTypedArray, Provider, Tensor, TensorView } from '../storage/index.js';
import type { OpConstants, OpDef, OpOperand } from '../submit/index.js';

const pipelines = new WeakMap<GPUDevice, Map<string, GPUComputePipeline>>();

function pipelineFor(device: GPUDevice, name: string, shader: string, constants: OpConstants): GPUComputePipeline {
  let cache = pipelines.get(device);
  if (cache === undefined) pipelines.set(device, (cache = new Map()));
  const key = `${name}\n${JSON.stringify(Object.entries(constants).sort(([a], [b]) => (a < b ? -1 : 1)))}\n${shader}`;
  let pipeline = cache.get(key);
  if (pipeline === undefined) {
    const module = device.createShaderModule({ code: shader, label: name });
    pipeline = device.createComputePipeline({ layout: 'auto', label: name, compute: { module, entryPoint: 'main', constants: { ...constants } } });
    cache.set(key, pipeline);
  }
  return pipeline;
}

function operandOf(t: TensorView | Tensor): OpOperand {
  return { dtype: t.dtype, shape: t.shape, contiguous: t.isContiguous };
}

/**
 * Runs `op` with `inputs` bound to its read bindings and `out` to its single read_write binding (the
 * op's last binding). Checks operands first: a bad call throws the op's TenonError and changes nothing.
 */
export async function dispatch<P>(provider: Provider, op: OpDef<P, never>, inputs: readonly TensorView[], out: Tensor, params: P): Promise<void> {
  const operands = [...inputs, out];
  op.check(operands.map(operandOf), params);
  if (provider instanceof WebGPUProvider) {
    await dispatchDevice(provider, op, inputs, out, params);
    return;
  }
  const prepared = [];
  try {
    const arrays: AnyTypedArray[] = [];
    for (const v of inputs) {
      const p = await v.prepareHost();
      prepared.push(p);
      if (p.kind !== 'contiguous') throw new TenonError('EINVAL', 'operands must be contiguous', { op: `train.${op.name}`, reason: 'not-contiguous' });
      arrays.push(p.asArray());
    }
    const w = await out.prepareHostMut();
    prepared.push(w);
    if (w.kind !== 'contiguous') throw new TenonError('EINVAL', 'operands must be contiguous', { op: `train.${op.name}`, reason: 'not-contiguous' });
    arrays.push(w.asArray());
    op.host(params, arrays as never);
  } finally {
    for (const p of prepared) p.release();
  }
}

async function dispatchDevice<P>(provider: WebGPUProvider, op: OpDef<P, never>, inputs: readonly TensorView[], out: Tensor, params: P): Promise<void> {
  const device = provider.device;
  const prepared = [];
  let uniform: GPUBuffer | undefined;
  try {
    for (const v of inputs) prepared.push(v.prepareDevice());
    prepared.push(out.prepareDeviceMut());
    const bytes = op.params(params, prepared.map((p) => p.elementOffset));
    const [x, y, z] = op.workgroups(params, device.limits);
    device.pushErrorScope('validation');
    let error: GPUError | null;
    try {
      const pipeline = pipelineFor(device, op.name, op.shader, op.constants(params));
      uniform = device.createBuffer({ size: op.paramsBytes, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(uniform, 0, bytes);
      const bindGroup = device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [...prepared.map((p, binding) => ({ binding, resource: p.binding() })), { binding: prepared.length, resource: { buffer: uniform } }],
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
    if (provider.lossObserved) throw new TenonError('ENODEV', 'device lost during an eager op', { op: `train.${op.name}`, reason: 'device-lost' });
    if (error !== null) throw new TenonError('EIO', error.message, { op: `train.${op.name}`, reason: 'gpu-validation', cause: error });
  } finally {
    uniform?.destroy();
    for (const p of prepared) p.release();
  }
}
