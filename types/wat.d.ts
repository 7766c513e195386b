// Kernel sources imported through scripts/wat.ts: two binaries of one WAT file, for an ordinary and for
// a shared imported memory.
declare module '*.wat?wasm' {
  const modules: { readonly plain: Uint8Array<ArrayBuffer>; readonly shared: Uint8Array<ArrayBuffer> };
  export default modules;
}
