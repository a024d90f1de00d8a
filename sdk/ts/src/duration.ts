import { OptionError } from './errors.js';

/** A duration: milliseconds, or a string such as `'30s'`, `'500ms'`, `'1h'`, `'1m30s'`. */
export type Duration = number | string;

const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of d; what names the option in the error. */
export function toMs(d: Duration, what: string): number {
  if (typeof d === 'number') {
    if (!Number.isFinite(d)) throw new OptionError(`${what} ${d}: not a finite number of milliseconds`);
    return d;
  }
  if (typeof d !== 'string') throw new OptionError(`${what}: a duration is milliseconds or a string like '30s'`);
  const parts = d.trim().match(/(\d+(?:\.\d+)?)(ms|s|m|h)/g);
  if (parts === null || parts.join('') !== d.trim()) {
    throw new OptionError(`${what} ${JSON.stringify(d)}: not a duration (like '500ms', '30s', '5m', '1h')`);
  }
  let ms = 0;
  for (const p of parts) {
    const [, n, unit] = p.match(/(\d+(?:\.\d+)?)(ms|s|m|h)/)!;
    ms += Number(n) * units[unit!]!;
  }
  return ms;
}

/** ms as a person reads it: 1500 → '1.5s'. */
export function show(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms >= 1000) return `${ms / 1000}s`;
  return `${ms}ms`;
}
