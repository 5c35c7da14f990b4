/**
 * Option checks: every invalid option fails at once with a TypeError naming it.
 */
export function checkNumber(name: string, value: unknown, opts: { min?: number; max?: number; integer?: boolean } = {}): void {
  if (value === undefined) return;
  const min = opts.min ?? 0;
  if (typeof value !== 'number' || Number.isNaN(value) || (opts.integer !== false && !Number.isInteger(value)) || value < min || (opts.max !== undefined && value > opts.max)) {
    const range = opts.max !== undefined ? `from ${min} to ${opts.max}` : `>= ${min}`;
    throw new TypeError(`Option ${name} must be ${opts.integer === false ? 'a number' : 'an integer'} ${range} (got ${typeof value === 'number' ? value : typeof value}).`);
  }
}

export function checkBoolean(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') throw new TypeError(`Option ${name} must be a boolean (got ${typeof value}).`);
}

export function checkString(name: string, value: unknown, allowEmpty = false): void {
  if (value === undefined) return;
  if (typeof value !== 'string' || (!allowEmpty && value === '')) throw new TypeError(`Option ${name} must be a non-empty string.`);
}

export function checkOneOf<T>(name: string, value: unknown, allowed: readonly T[]): void {
  if (value !== undefined && !allowed.includes(value as T)) {
    throw new TypeError(`Option ${name} must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')} (got ${JSON.stringify(value)}).`);
  }
}

export function checkObject(name: string, value: unknown): void {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    throw new TypeError(`Option ${name} must be an object.`);
  }
}

/** Rejects option names nobody reads: a typo must not be ignored silently. */
export function checkKnown(scope: string, value: object | undefined, known: readonly string[]): void {
  if (!value) return;
  for (const k of Object.keys(value)) {
    if (!known.includes(k)) throw new TypeError(`Unknown option ${scope ? scope + '.' : ''}${k}; known options are: ${known.join(', ')}.`);
  }
}
