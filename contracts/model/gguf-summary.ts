// A plain-data summary of a parsed GGUF file (version, layout, every metadata entry, the tensor table),
// so suites can compare the results of different range sources with one deep equality.
import type { GgufFile } from '../../src/index.js';

export interface GgufSummary {
  readonly version: number;
  readonly size: number;
  readonly alignment: number;
  readonly dataOffset: number;
  readonly architecture: string | undefined;
  readonly metadata: readonly (readonly [string, unknown])[];
  readonly tensors: readonly { readonly name: string; readonly shape: readonly number[]; readonly type: string; readonly offset: number; readonly byteLength: number }[];
}

export function summarize(file: GgufFile): GgufSummary {
  return {
    version: file.version,
    size: file.size,
    alignment: file.alignment,
    dataOffset: file.dataOffset,
    architecture: file.architecture,
    metadata: [...file.metadata.keys()].map((key) => [key, file.metadata.get(key)] as const),
    tensors: file.tensors.map((t) => ({ name: t.name, shape: [...t.shape], type: t.type.name, offset: t.offset, byteLength: t.byteLength })),
  };
}
