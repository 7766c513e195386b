// Where Chromium lives and how it must be started to expose WebGPU on this machine kind
// (TOOLCHAIN.md, lane 1). Shared by vitest browser mode, Playwright and the demo server.
export function chromiumPath() {
  return process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
}

// --enable-unsafe-webgpu exposes navigator.gpu (SwiftShader without a GPU); the networking flags stop
// Chromium from flooding a closed network with connection attempts.
export const chromiumArgs = [
  '--enable-unsafe-webgpu',
  '--no-sandbox',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// SharedArrayBuffer and Atomics.waitAsync need a cross-origin isolated page.
export const crossOriginIsolationHeaders = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

// The hardware lane (npm run test:hardware) wants the machine's real GPU: the same flags plus those that
// let headless Chromium use a GPU it would otherwise skip (blocklist, Vulkan). Which adapter it got is
// checked, never assumed: the lane fails on a fallback adapter (e2e/hardware-gate.ts).
export const hardwareChromiumArgs = [...chromiumArgs, '--ignore-gpu-blocklist', '--enable-features=Vulkan', '--use-angle=vulkan'];
