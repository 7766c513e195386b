// Shader modules linked through scripts/wesl.ts: the WGSL of each variant the root module declares
// (`// variant: a+b` lines), keyed by its condition names sorted and joined with '+'.
declare module '*.wesl?wesl' {
  const variants: Readonly<Record<string, string>>;
  export default variants;
}
