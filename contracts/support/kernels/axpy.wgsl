// Test kernel for the submission suites: out[i] = alpha * x[i] + y[i] over n elements.
// Bindings cover whole claims; the params carry each binding's element offset.
struct Params {
  n: u32,
  x_offset: u32,
  y_offset: u32,
  out_offset: u32,
  alpha: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

override WORKGROUP: u32 = 64;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  if (i >= params.n) {
    return;
  }
  out[params.out_offset + i] = params.alpha * x[params.x_offset + i] + y[params.y_offset + i];
}
