/**
 * Kubernetes resource quantities as the workload agent reads them from Pods and Nodes of the
 * workload cluster (docs/workload.md, "Limits").
 *
 * Every figure the agent reports lands in the CellNodeSet's status, whose integers the API server
 * stores as int64 and which JavaScript reads exactly only up to 2^53 − 1. The API server admits a
 * Pod asking `nvidia.com/gpumem: "9223372036854775807"`; summed into a status that figure would
 * make every status write fail. So a quantity is read to a whole number no larger than
 * {@link QUANTITY_MAX}, the bound the CellNodeSet schema states, or it is not read at all, and
 * sums saturate at that bound instead of growing past it.
 */

/** The largest figure the agent reports: the largest integer JavaScript holds exactly (2^53 − 1). */
export const QUANTITY_MAX = Number.MAX_SAFE_INTEGER

/** Longer text is no quantity the API server would have admitted for these resources. */
const MAX_QUANTITY_TEXT = 64

/** `<sign><number><suffix>`, the API server's form: a binary or decimal SI suffix, or an exponent. */
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([KMGTPE]i|[numkMGTPE])|[eE]([+-]?\d{1,3}))?$/

const FACTORS: Readonly<Record<string, number>> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60
}

/** A Kubernetes quantity as a number; undefined when it does not read as one. */
export function parseQuantity(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined
  if (typeof value !== 'string' || value.length > MAX_QUANTITY_TEXT) return undefined
  const match = QUANTITY.exec(value)
  if (match === null) return undefined
  const [, number = '', suffix, exponent] = match
  const factor = suffix !== undefined ? (FACTORS[suffix] as number) : exponent !== undefined ? 10 ** Number(exponent) : 1
  const result = Number(number) * factor
  return Number.isFinite(result) ? result : undefined
}

/**
 * A quantity as a whole count of `unit` (1 for plain counts, 1/1000 for millicores, …), rounded up
 * as the scheduler rounds requests: undefined when it does not read, is negative (the API server
 * admits no negative request) or is past {@link QUANTITY_MAX}.
 */
export function wholeQuantity(value: unknown, unit = 1): number | undefined {
  const parsed = parseQuantity(value)
  if (parsed === undefined || parsed < 0) return undefined
  const scaled = parsed / unit
  // 1.1 cores are 1100.0000000000002 millicores in floating point: a figure that close to a whole
  // number is that number, not the next one up.
  const nearest = Math.round(scaled)
  const whole = Math.abs(scaled - nearest) <= 1e-9 * Math.max(1, nearest) ? nearest : Math.ceil(scaled)
  return whole <= QUANTITY_MAX ? whole : undefined
}

/** `a + b`, held at {@link QUANTITY_MAX} rather than past it. */
export function saturatingAdd(a: number, b: number): number {
  return Math.min(a + b, QUANTITY_MAX)
}
