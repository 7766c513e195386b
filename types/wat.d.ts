// Kernel sources imported through scripts/wat.ts: two binaries of one WAT file, for an ordinary and for
// a shared imported memory, and the same two of its relaxed-SIMD form.
declare module '*.wat?wasm' {
  interface Binaries {
    readonly plain: Uint8Array<ArrayBuffer>;
    readonly shared: Uint8Array<ArrayBuffer>;
  }
  const modules: Binaries & { readonly relaxed: Binaries };
  export default modules;
}
