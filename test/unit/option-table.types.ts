/**
 * Compile-time ties between an option table and its interface (checked by `npm run typecheck`;
 * every `@ts-expect-error` below fails the build if the mistake under it ever compiles). The
 * real tables are written the same way: `defineOptions<SentinelOptions>()({ … })` and so on.
 */
import { defineOptions, withDefaults } from '../../src/options.js';

interface Example {
  timeout?: number;
  mode?: 'a' | 'b';
  enabled?: boolean;
  name?: string;
  backoff?: { initialDelay?: number; maxDelay?: number };
  hook?: () => void;
}

const ok = defineOptions<Example>()({
  timeout: { kind: 'integer', unit: 'ms', default: 5000, doc: '' },
  mode: { kind: 'oneOf', values: ['a', 'b'], doc: '' },
  enabled: { kind: 'boolean', default: true, doc: '' },
  name: { kind: 'string', doc: '' },
  backoff: { kind: 'group', doc: '', fields: { initialDelay: { kind: 'integer', default: 1, doc: '' }, maxDelay: { kind: 'integer', default: 2, doc: '' } } },
  hook: { kind: 'custom', type: 'function', doc: '', validate: () => {} },
});

// Defaults make an option always set once resolved; one without a default stays optional.
const resolved = withDefaults(ok, {} as Example);
export const always: number = resolved.timeout + resolved.backoff.maxDelay;
// @ts-expect-error `mode` has no default: it may be undefined.
export const maybe: 'a' | 'b' = resolved.mode;

// @ts-expect-error an option of the interface missing from the table (`hook`)
defineOptions<Example>()({
  timeout: { kind: 'integer', doc: '' },
  mode: { kind: 'oneOf', values: ['a', 'b'], doc: '' },
  enabled: { kind: 'boolean', doc: '' },
  name: { kind: 'string', doc: '' },
  backoff: { kind: 'group', doc: '', fields: { initialDelay: { kind: 'integer', doc: '' }, maxDelay: { kind: 'integer', doc: '' } } },
});

defineOptions<Example>()({
  timeout: { kind: 'integer', doc: '' },
  mode: { kind: 'oneOf', values: ['a', 'b'], doc: '' },
  enabled: { kind: 'boolean', doc: '' },
  name: { kind: 'string', doc: '' },
  backoff: { kind: 'group', doc: '', fields: { initialDelay: { kind: 'integer', doc: '' }, maxDelay: { kind: 'integer', doc: '' } } },
  hook: { kind: 'custom', type: 'function', doc: '', validate: () => {} },
  // @ts-expect-error a table entry the interface lacks
  retries: { kind: 'integer', doc: '' },
});

defineOptions<Example>()({
  timeout: { kind: 'integer', doc: '' },
  mode: { kind: 'oneOf', values: ['a', 'b'], doc: '' },
  enabled: { kind: 'boolean', doc: '' },
  name: { kind: 'string', doc: '' },
  // @ts-expect-error a field the group's type lacks
  backoff: { kind: 'group', doc: '', fields: { initialDelay: { kind: 'integer', doc: '' }, maxDelay: { kind: 'integer', doc: '' }, factor: { kind: 'integer', doc: '' } } },
  hook: { kind: 'custom', type: 'function', doc: '', validate: () => {} },
});

defineOptions<Example>()({
  // @ts-expect-error a kind that does not fit the option's type (a number checked as a boolean)
  timeout: { kind: 'boolean', doc: '' },
  mode: { kind: 'oneOf', values: ['a', 'b'], doc: '' },
  enabled: { kind: 'boolean', doc: '' },
  name: { kind: 'string', doc: '' },
  backoff: { kind: 'group', doc: '', fields: { initialDelay: { kind: 'integer', doc: '' }, maxDelay: { kind: 'integer', doc: '' } } },
  hook: { kind: 'custom', type: 'function', doc: '', validate: () => {} },
});

defineOptions<Example>()({
  timeout: { kind: 'integer', doc: '' },
  // @ts-expect-error a oneOf that leaves out a member of the union ('b')
  mode: { kind: 'oneOf', values: ['a'], doc: '' },
  enabled: { kind: 'boolean', doc: '' },
  name: { kind: 'string', doc: '' },
  backoff: { kind: 'group', doc: '', fields: { initialDelay: { kind: 'integer', doc: '' }, maxDelay: { kind: 'integer', doc: '' } } },
  hook: { kind: 'custom', type: 'function', doc: '', validate: () => {} },
});

defineOptions<Example>()({
  timeout: { kind: 'integer', doc: '' },
  // @ts-expect-error a oneOf value outside the union
  mode: { kind: 'oneOf', values: ['a', 'b', 'c'], doc: '' },
  enabled: { kind: 'boolean', doc: '' },
  name: { kind: 'string', doc: '' },
  backoff: { kind: 'group', doc: '', fields: { initialDelay: { kind: 'integer', doc: '' }, maxDelay: { kind: 'integer', doc: '' } } },
  hook: { kind: 'custom', type: 'function', doc: '', validate: () => {} },
});

defineOptions<Example>()({
  // @ts-expect-error a default of the wrong type
  timeout: { kind: 'integer', default: '5000', doc: '' },
  mode: { kind: 'oneOf', values: ['a', 'b'], doc: '' },
  enabled: { kind: 'boolean', doc: '' },
  name: { kind: 'string', doc: '' },
  backoff: { kind: 'group', doc: '', fields: { initialDelay: { kind: 'integer', doc: '' }, maxDelay: { kind: 'integer', doc: '' } } },
  hook: { kind: 'custom', type: 'function', doc: '', validate: () => {} },
});
