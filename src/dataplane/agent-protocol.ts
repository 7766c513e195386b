// What a data-plane worker exposes over comlink (workers/dataplane.worker.ts). Type-only.
// Descriptors never cross threads: the worker keeps them and hands out small local handles, which mean
// nothing outside that worker (D1, K1). Errors cross as TenonError with their code (agent.ts installs
// the transfer handler on both sides).
import type { DescriptorInfo, NodeInfo, OpenOptions } from './types.js';

export type AgentOpenOptions = Omit<OpenOptions, 'signal'> & {
  /** Registers an AbortController under this key; `cancel(key)` aborts the open. */
  readonly cancelKey?: string;
};

export interface AgentIoOptions {
  /** Use the blocking readSync / writeSync variant (Atomics.wait). */
  readonly sync?: boolean;
  readonly cancelKey?: string;
}

/** Deterministic byte stream used by pump/drain: byte i of stream `seed`. */
export interface PumpOptions {
  readonly total: number;
  readonly chunk: number;
  readonly seed: number;
  readonly sync?: boolean;
  /** Close cleanly when done (default true). */
  readonly close?: boolean;
}

export interface DrainOptions {
  readonly chunk: number;
  readonly seed: number;
  readonly sync?: boolean;
  /** Stop after this many bytes (default: until EOF or error). */
  readonly limit?: number;
}

export interface DrainResult {
  readonly bytes: number;
  /** 'eof', or the code of the error that ended the drain. */
  readonly end: string;
  /** First position whose byte did not match the pattern, or null. */
  readonly mismatchAt: number | null;
}

export interface DataPlaneAgent {
  connect(port: MessagePort): Promise<{ readonly runId: string }>;
  open(path: string, options?: AgentOpenOptions): Promise<number>;
  cancel(key: string): void;
  read(handle: number, max: number, options?: AgentIoOptions): Promise<Uint8Array>;
  write(handle: number, bytes: Uint8Array, options?: AgentIoOptions): Promise<number>;
  writeAll(handle: number, bytes: Uint8Array): Promise<number>;
  flush(handle: number): Promise<void>;
  close(handle: number): Promise<void>;
  abort(handle: number): Promise<void>;
  info(handle: number): DescriptorInfo;
  ensureStream(path: string, capacity?: number): Promise<boolean>;
  replaceStream(path: string): Promise<number>;
  stat(path: string): Promise<NodeInfo>;
  /** Stages, writes and publishes a whole blob (writeBlob + seal). */
  putBlob(path: string, bytes: Uint8Array): Promise<number | undefined>;
  readBlob(path: string): Promise<Uint8Array>;
  pump(handle: number, options: PumpOptions): Promise<number>;
  drain(handle: number, options: DrainOptions): Promise<DrainResult>;
  closeSession(): Promise<void>;
}
