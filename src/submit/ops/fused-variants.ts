// Picking one linked variant of a WESL kernel (scripts/wesl.ts links every variant a root module
// declares at build time, keyed by its condition names sorted and joined with '+'). Pure lookup: no
// shader text is built or joined here.
import { TenonError } from '../../errors.js';

/** The WGSL of the variant whose true conditions are `names`; EINVAL `bad-param` for one the module does not declare. */
export function weslVariant(variants: Readonly<Record<string, string>>, names: readonly string[], op: string): string {
  const key = [...names].sort().join('+');
  const source = variants[key];
  if (source === undefined) throw new TenonError('EINVAL', `${op} has no variant ${key || 'base'}`, { op: `ops.${op}`, reason: 'bad-param', ids: { variant: key } });
  return source;
}
