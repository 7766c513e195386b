// AdamW configuration for the trainers: defaults, merging a partial configuration and validating it
// (TenonError EINVAL `bad-param` naming the field; nothing is created when it throws). The update itself
// is the apply_grad_adamw op (src/submit/ops/grad-adamw.ts), run on the provider that holds the parameters.
import { TenonError } from '../errors.js';
import { ADAMW_DEFAULTS } from './llama-grad.js';
import type { AdamWConfig } from './llama-grad.js';

/** `partial` over ADAMW_DEFAULTS, checked: lr and weightDecay finite and >= 0, betas in (0, 1), eps > 0. */
export function adamwConfig(partial: Partial<AdamWConfig> = {}, op = 'train.adamw'): AdamWConfig {
  const c = { ...ADAMW_DEFAULTS, ...partial };
  const bad = (field: string, rule: string): never => {
    throw new TenonError('EINVAL', `${field} must be ${rule}`, { op, reason: 'bad-param', ids: { param: field } });
  };
  for (const field of ['lr', 'weightDecay'] as const) if (typeof c[field] !== 'number' || !Number.isFinite(c[field]) || c[field] < 0) bad(field, 'a finite number >= 0');
  for (const field of ['beta1', 'beta2'] as const) if (typeof c[field] !== 'number' || !(c[field] > 0 && c[field] < 1)) bad(field, 'in (0, 1)');
  if (typeof c.eps !== 'number' || !Number.isFinite(c.eps) || !(c.eps > 0)) bad('eps', 'a finite number > 0');
  return c;
}
