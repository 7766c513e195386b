// Browser half of the ES module example: a graph on WebGPU (host provider when there is no WebGPU),
// then a file through the data plane with open / write / close and open / read.
import { add, connectSession, createAllocationGroup, createDataPlane, createHostProvider, createRuntime, createWebGPUProvider, fromArray, isTenonError, zeros } from 'tenon';

const log = (line) => (document.getElementById('log').textContent += `${line}\n`);
const result = {};

async function main() {
  let provider;
  try {
    provider = await createWebGPUProvider();
  } catch (err) {
    if (!isTenonError(err, 'ENOTSUP')) throw err;
    provider = createHostProvider();
  }
  result.provider = provider.kind;
  const runtime = createRuntime(provider);
  const group = createAllocationGroup();
  const x = group.insert(await fromArray(provider, 'f32', Float32Array.of(0.5, 1.5, 2.5))).descriptor;
  const y = group.insert(await fromArray(provider, 'f32', Float32Array.of(10, 20, 30))).descriptor;
  const z = group.insert(await zeros(provider, 'f32', [3])).descriptor;
  const f32x3 = (slot) => ({ slot, dtype: 'f32', shape: [3] });
  const graph = runtime.compile({
    name: 'x+y',
    inputs: { x: f32x3(x), y: f32x3(y), z: f32x3(z) },
    dispatches: [{ kernel: add, bind: ['x', 'y', 'z'], params: { n: 3 } }],
    outputs: ['z'],
  });
  const outcome = await (await runtime.submit(graph, group)).wait();
  if (outcome.kind !== 'completed') throw new Error(`submission ended ${outcome.kind}`);
  {
    using view = outcome.bundle.output(0);
    result.sum = Array.from(await view.toArray());
  }
  outcome.bundle.dispose();
  log(`${provider.kind}: x + y = ${result.sum.join(', ')}`);

  const plane = await createDataPlane({ name: 'esm-example' });
  const files = await connectSession(plane.createSessionPort({ runId: 'esm', read: ['/'], write: ['/'] }));
  const bytes = new TextEncoder().encode('written through a descriptor');
  const w = await files.open('/notes/a.txt', { access: 'write', create: true, truncate: true, allocation: { length: bytes.length } });
  await w.write(bytes);
  await w.close(); // a clean close publishes one revision
  const r = await files.open('/notes/a.txt', { access: 'read' });
  const back = new Uint8Array(r.info().length);
  await r.read(back);
  await r.close();
  result.file = new TextDecoder().decode(back);
  log(`/notes/a.txt = ${result.file}`);
  await files.close();
  await plane.close();
}

main().then(
  () => {
    window.tenonExample = result;
    document.getElementById('status').textContent = 'done';
  },
  (err) => {
    window.tenonExample = { error: `${err.code ?? err.name}: ${err.message}` };
    document.getElementById('status').textContent = `failed: ${err.code ?? err.name}: ${err.message}`;
  },
);
