/** What to change on the subscriber connections so that each name is subscribed exactly where it belongs. */
export interface SubscriptionPlan<T> {
  /** Per target: names to subscribe there. */
  add: Map<T, string[]>;
  /** Per target: names to unsubscribe there (no longer wanted, or wanted elsewhere now). */
  remove: Map<T, string[]>;
  /** Targets that carry nothing once the plan is applied: their connection can close. */
  idle: T[];
}

/**
 * Compares where names must be subscribed (`wanted`: name -> targets) with where they are
 * (`actual`: target -> names) and says what to send. A name is never subscribed twice on one
 * target, and a name that moved is removed from its old target in the same plan, so a message
 * is never delivered from two places.
 */
export function planSubscriptions<T>(wanted: ReadonlyMap<string, readonly T[]>, actual: ReadonlyMap<T, ReadonlySet<string>>): SubscriptionPlan<T> {
  const add = new Map<T, string[]>();
  const remove = new Map<T, string[]>();
  const push = (m: Map<T, string[]>, t: T, name: string) => {
    const list = m.get(t);
    if (list) list.push(name);
    else m.set(t, [name]);
  };
  for (const [name, targets] of wanted) {
    for (const t of targets) if (!actual.get(t)?.has(name)) push(add, t, name);
  }
  const idle: T[] = [];
  for (const [t, names] of actual) {
    let kept = 0;
    for (const name of names) {
      if (wanted.get(name)?.includes(t)) kept++;
      else push(remove, t, name);
    }
    if (kept === 0 && !add.has(t)) idle.push(t);
  }
  return { add, remove, idle };
}

/** Splits names into groups that one command may carry (e.g. one SSUBSCRIBE per slot). */
export function groupBy<K>(names: readonly string[], group: (name: string) => K): Map<K, string[]> {
  const out = new Map<K, string[]>();
  for (const n of names) {
    const g = group(n);
    const list = out.get(g);
    if (list) list.push(n);
    else out.set(g, [n]);
  }
  return out;
}
