// Node half of the ES module example: `node examples/esm/node.mjs` after `npm run build` (inside this
// repository 'tenon' resolves to the package itself; in another project, after `npm install tenon`).
// The host provider needs no GPU: a graph runs on synchronous CPU kernels with the same ownership rules.
import { add, createAllocationGroup, createHostProvider, createRuntime, fromArray, zeros } from 'tenon';

const host = createHostProvider();
const runtime = createRuntime(host);
const group = createAllocationGroup();
const x = group.insert(await fromArray(host, 'f32', Float32Array.of(1, 2, 3))).descriptor;
const y = group.insert(await fromArray(host, 'f32', Float32Array.of(4, 5, 6))).descriptor;
const z = group.insert(await zeros(host, 'f32', [3])).descriptor;
const f32x3 = (slot) => ({ slot, dtype: 'f32', shape: [3] });
const graph = runtime.compile({
  name: 'x+y',
  inputs: { x: f32x3(x), y: f32x3(y), z: f32x3(z) },
  dispatches: [{ kernel: add, bind: ['x', 'y', 'z'], params: { n: 3 } }],
  outputs: ['z'],
});
const outcome = await (await runtime.submit(graph, group)).wait();
if (outcome.kind !== 'completed') throw new Error(`submission ended ${outcome.kind}`);
const view = outcome.bundle.output(0);
const sum = Array.from(await view.toArray());
view.release();
outcome.bundle.dispose();
graph.dispose();
console.log(JSON.stringify({ sum, liveRoots: host.counters().liveRoots }));
