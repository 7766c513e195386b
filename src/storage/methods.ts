// The canonical method lists (G4 "Method distribution"). One source of truth: tensor.ts installs the
// delegating members of Tensor and TensorViewMut from these lists, and the API-parity contract test
// checks every family against them.
//
// READ members are implemented once, on TensorView; Tensor and TensorViewMut reach them through asView().
// MUTATION members are implemented once, on TensorViewMut; Tensor reaches them through asViewMut().
// CONSUMING members exist only on Tensor (and AllocationGroup); views never have them.

/** Read-only getters implemented on TensorView. */
export const READ_GETTERS = [
  'dtype',
  'shape',
  'strides',
  'rank',
  'size',
  'byteLength',
  'byteOffset',
  'layout',
  'provider',
  'isContiguous',
] as const;

/** Read-only methods implemented on TensorView. */
export const READ_METHODS = ['view', 'prepareHost', 'prepareDevice', 'toArray', 'duplicate', 'diagnostics'] as const;

/** Mutating methods implemented on TensorViewMut. */
export const MUTATION_METHODS = ['viewMut', 'prepareHostMut', 'prepareDeviceMut', 'write', 'fill', 'fillRange'] as const;

/** Consuming methods: owners only. */
export const CONSUMING_METHODS = ['dispose', 'split', 'intoLayout'] as const;

export type ReadGetter = (typeof READ_GETTERS)[number];
export type ReadMethod = (typeof READ_METHODS)[number];
export type MutationMethod = (typeof MUTATION_METHODS)[number];
export type ConsumingMethod = (typeof CONSUMING_METHODS)[number];
