// Typed use of the package (the packaging test type-checks this file against the installed package's
// declarations, strict, without skipLibCheck): owners, borrows, a session and the data plane by type.
import { TextSession, createAllocationGroup, createHostProvider, createRuntime, fromArray, isTenonError, parseLlamaModel, parseTokenizer } from 'tenon';
import type { DescriptorSlot, GeneratedToken, Outcome, Runtime, Session, Tensor, TenonError } from 'tenon';

export async function sumOnHost(values: Float32Array): Promise<number> {
  const host = createHostProvider();
  const t: Tensor<'f32'> = await fromArray(host, 'f32', values);
  using view = t.view();
  const data: Float32Array = await view.toArray();
  return data.reduce((s, v) => s + v, 0);
}

export function slots(): readonly DescriptorSlot[] {
  const group = createAllocationGroup();
  return group.descriptors();
}

export async function generate(modelBytes: Uint8Array, tokenizerBytes: Uint8Array, runtime: Runtime): Promise<string> {
  const model = parseLlamaModel(modelBytes);
  const tokenizer = parseTokenizer(tokenizerBytes, model.config.vocabSize);
  const session = await TextSession.create({ runtime, model, tokenizer, maxSeq: 64 });
  let text = '';
  for await (const t of session.generate('Once upon a time', { maxTokens: 8 }) as AsyncIterable<GeneratedToken>) text += t.text;
  session.dispose();
  return text;
}

export function describeOutcome(o: Outcome): string {
  return o.kind;
}

export async function stat(files: Session, path: string): Promise<number | TenonError['code']> {
  try {
    const info = await files.stat(path);
    return info.kind === 'blob' ? info.length : 0;
  } catch (err) {
    if (isTenonError(err)) return err.code;
    throw err;
  }
}

export const host = createRuntime(createHostProvider());
