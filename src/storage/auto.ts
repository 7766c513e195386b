// createProvider: the provider by name, or chosen for the machine ('auto'), with the choice and its reason
// attached as `provider.selection`.
//
// 'auto' asks the GPU entry point for an adapter and looks at it before any device exists: a hardware
// adapter gets the WebGPU provider over that same adapter (no second request); a fallback adapter
// (adapter.info.isFallbackAdapter) or one that names a CPU implementation (SwiftShader, llvmpipe,
// lavapipe, softpipe, WARP, Microsoft Basic Render Driver in its vendor, architecture, device or
// description) gets the host provider, because a GPU emulated on the CPU runs tenon's kernels tens of
// times slower than the host provider's WebAssembly (TOOLCHAIN.md: Chromium's SwiftShader reports vendor
// `google`, architecture `swiftshader`, isFallbackAdapter true; Dawn in Node reports the same, with
// description `SwiftShader driver ...`). No entry point or no adapter also gives the host provider. The
// adapter looked at and not used is simply dropped: no device was requested from it.
// 'webgpu' and 'host' force that provider: 'webgpu' fails as createWebGPUProvider does (ENOTSUP
// no-webgpu / no-adapter) and runs on a software adapter when that is what there is; 'host' never touches
// the GPU.
// Bad arguments fail with EINVAL before anything is requested. The returned provider is exactly what
// createWebGPUProvider / createHostProvider return (the caller owns it and destroys it the same way);
// `selection` is a frozen record and changes nothing about it. Thread: the caller's.
import { TenonError } from '../errors.js';
import { HostProvider } from './host.js';
import type { HostProviderOptions } from './host.js';
import type { ProviderKind } from './provider.js';
import { checkLimitCaps, createWebGPUProvider, providerOnAdapter } from './webgpu.js';
import type { WebGPUProvider, WebGPUProviderOptions } from './webgpu.js';

export type ProviderChoice = 'auto' | 'webgpu' | 'host';

/** Why a provider was chosen. */
export type SelectionReason =
  /** The caller named the provider. */
  | 'forced'
  /** auto: the adapter is real hardware. */
  | 'hardware-adapter'
  /** auto: the adapter says it is a fallback adapter (adapter.info.isFallbackAdapter). */
  | 'fallback-adapter'
  /** auto: the adapter names a CPU implementation of the GPU (SwiftShader, llvmpipe, ...). */
  | 'software-adapter'
  /** auto: there is no WebGPU entry point (no navigator.gpu and none passed). */
  | 'no-webgpu'
  /** auto: the entry point gave no adapter. */
  | 'no-adapter';

/** What identifies an adapter (the fields of GPUAdapterInfo that say what it is). */
export interface AdapterIdentity {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  /** Absent where the browser does not report it. */
  readonly isFallbackAdapter?: boolean | undefined;
}

export interface AdapterClass {
  /** True for a fallback adapter or one that names a CPU implementation. */
  readonly software: boolean;
  readonly reason: 'fallback-adapter' | 'software-adapter' | 'hardware-adapter';
  /** The CPU implementation named in the identity, when one is. */
  readonly marker?: string;
}

export interface AdapterSummary extends AdapterIdentity, AdapterClass {}

export interface ProviderSelection {
  readonly requested: ProviderChoice;
  readonly kind: ProviderKind;
  readonly reason: SelectionReason;
  /** The adapter looked at; absent when none was (forced host, no entry point, no adapter). */
  readonly adapter?: AdapterSummary;
  /** One line for people: which provider and why. */
  readonly message: string;
}

export interface CreateProviderOptions {
  /** The GPU entry point; defaults to `navigator.gpu`. Node passes the `webgpu` package's `create([])`. */
  readonly gpu?: GPU;
  /** Options of the WebGPU provider when it is the one made. */
  readonly webgpu?: Omit<WebGPUProviderOptions, 'gpu'>;
  /** Options of the host provider when it is the one made. */
  readonly host?: HostProviderOptions;
}

/** A provider and why it was chosen. */
export type SelectedProvider = (HostProvider | WebGPUProvider) & { readonly selection: ProviderSelection };

const CHOICES: readonly ProviderChoice[] = ['auto', 'webgpu', 'host'];

/** Names of CPU implementations of WebGPU's backends, matched as whole words in an adapter's identity. */
const SOFTWARE_MARKER = /\b(swiftshader|llvmpipe|lavapipe|softpipe|warp|microsoft basic render driver)\b/i;

/** Says whether an adapter is a GPU emulated on the CPU (fallback flag first, then its names). */
export function classifyAdapter(info: AdapterIdentity): AdapterClass {
  if (info.isFallbackAdapter === true) return { software: true, reason: 'fallback-adapter' };
  for (const field of [info.vendor, info.architecture, info.device, info.description]) {
    const found = SOFTWARE_MARKER.exec(typeof field === 'string' ? field : '');
    if (found !== null) return { software: true, reason: 'software-adapter', marker: found[1]!.toLowerCase() };
  }
  return { software: false, reason: 'hardware-adapter' };
}

function summarize(info: GPUAdapterInfo): AdapterSummary {
  const identity: AdapterIdentity = {
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    isFallbackAdapter: (info as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter,
  };
  return Object.freeze({ ...identity, ...classifyAdapter(identity) });
}

function named(a: AdapterSummary): string {
  return [a.vendor, a.architecture, a.description].filter((s) => s !== '').join(' ') || 'unnamed adapter';
}

function explain(kind: ProviderKind, reason: SelectionReason, adapter: AdapterSummary | undefined): string {
  const on = adapter === undefined ? '' : ` (${named(adapter)})`;
  switch (reason) {
    case 'forced':
      return kind === 'host' ? 'host provider, as asked' : `WebGPU provider, as asked${on}${adapter?.software ? ': a software adapter, slower than the host provider' : ''}`;
    case 'hardware-adapter':
      return `WebGPU provider: a hardware adapter${on}`;
    case 'fallback-adapter':
      return `host provider: the WebGPU adapter is a fallback adapter${on}, where the CPU runs faster`;
    case 'software-adapter':
      return `host provider: the WebGPU adapter is ${adapter?.marker ?? 'a CPU implementation'}${on}, where the CPU runs faster`;
    case 'no-webgpu':
      return 'host provider: WebGPU is not available here';
    case 'no-adapter':
      return 'host provider: WebGPU gave no adapter';
  }
}

function attach<P extends HostProvider | WebGPUProvider>(provider: P, requested: ProviderChoice, reason: SelectionReason, adapter?: AdapterSummary): P & { readonly selection: ProviderSelection } {
  const selection: ProviderSelection = Object.freeze({
    requested,
    kind: provider.kind,
    reason,
    ...(adapter === undefined ? {} : { adapter }),
    message: explain(provider.kind, reason, adapter),
  });
  Object.defineProperty(provider, 'selection', { value: selection, enumerable: true });
  return provider as P & { readonly selection: ProviderSelection };
}

/**
 * Makes the provider `choice` names, or for 'auto' (the default) the one this machine runs fastest: WebGPU
 * on a hardware adapter, the host provider on a fallback or software adapter or without WebGPU.
 * `provider.selection` says which and why. EINVAL `bad-provider-choice` / `bad-limit` before anything is
 * requested; a forced 'webgpu' fails as createWebGPUProvider does.
 */
export async function createProvider(choice: ProviderChoice = 'auto', options: CreateProviderOptions = {}): Promise<SelectedProvider> {
  const op = 'createProvider';
  if (!CHOICES.includes(choice)) {
    throw new TenonError('EINVAL', `provider must be ${CHOICES.join(', ')}`, { op, reason: 'bad-provider-choice', ids: { choice: String(choice) } });
  }
  const webgpu: WebGPUProviderOptions = { ...options.webgpu, ...(options.gpu === undefined ? {} : { gpu: options.gpu }) };
  checkLimitCaps(webgpu, op);
  if (choice === 'host') return attach(new HostProvider(options.host), choice, 'forced');
  if (choice === 'webgpu') {
    const provider = await createWebGPUProvider(webgpu);
    return attach(provider, choice, 'forced', summarize(provider.adapterInfo));
  }
  const gpu = webgpu.gpu ?? (globalThis.navigator as Navigator | undefined)?.gpu;
  if (gpu === undefined) return attach(new HostProvider(options.host), choice, 'no-webgpu');
  const adapter = await gpu.requestAdapter(webgpu.powerPreference ? { powerPreference: webgpu.powerPreference } : undefined);
  if (adapter === null) return attach(new HostProvider(options.host), choice, 'no-adapter');
  const summary = summarize(adapter.info);
  if (summary.software) return attach(new HostProvider(options.host), choice, summary.reason, summary);
  return attach(await providerOnAdapter(gpu, adapter, webgpu), choice, 'hardware-adapter', summary);
}
