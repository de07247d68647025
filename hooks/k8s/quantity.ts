/**
 * Resource quantities compared exactly, as the API server compares them (`resource.Quantity.Cmp`):
 * `1Gi`, `1024Mi` and `1073741824` are one amount. A quantity is read as an integer count of
 * 10^-scale units (a fraction with a power-of-ten denominator), so no float rounding decides
 * whether a claim would shrink.
 */

/** Longer text is no quantity the API server would have admitted. */
const MAX_TEXT = 64
/** Exponents past this bound are no quantity the API server admits (its range is about 10^±27). */
const MAX_EXPONENT = 40

/** `<sign><digits>[.<digits>]<suffix>`: a binary or decimal SI suffix, or an exponent. */
const FORM = /^([+-]?)(\d*)(?:\.(\d*))?(?:([KMGTPE]i|[numkMGTPE])|[eE]([+-]?\d{1,3}))?$/

const DECIMAL: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 }
const BINARY: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 }

/** An amount as `units × 10^-scale`. */
interface Exact {
  units: bigint
  scale: number
}

/** A quantity (an integer or a quantity string) as an exact amount; undefined when it does not read as one. */
function exact(value: unknown): Exact | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? { units: BigInt(value), scale: 0 } : undefined
  if (typeof value !== 'string' || value.length > MAX_TEXT) return undefined
  const match = FORM.exec(value)
  if (match === null) return undefined
  const [, sign = '', whole = '', fraction = '', suffix, exponent] = match
  if (whole === '' && fraction === '') return undefined
  const power = suffix !== undefined ? (DECIMAL[suffix] ?? 0) : exponent !== undefined ? Number(exponent) : 0
  if (Math.abs(power) > MAX_EXPONENT) return undefined
  let units = BigInt(`${whole}${fraction}` || '0') * 2n ** BigInt(suffix !== undefined ? (BINARY[suffix] ?? 0) : 0)
  if (sign === '-') units = -units
  const scale = fraction.length - power
  return scale >= 0 ? { units, scale } : { units: units * 10n ** BigInt(-scale), scale: 0 }
}

/** -1, 0 or 1 as `a` is less than, equal to or more than `b`; undefined when either is no quantity. */
export function compareQuantities(a: unknown, b: unknown): -1 | 0 | 1 | undefined {
  const x = exact(a)
  const y = exact(b)
  if (x === undefined || y === undefined) return undefined
  const left = x.units * 10n ** BigInt(y.scale)
  const right = y.units * 10n ** BigInt(x.scale)
  return left < right ? -1 : left > right ? 1 : 0
}

/** Whether `value` reads as a quantity above zero. */
export function isPositiveQuantity(value: unknown): boolean {
  return compareQuantities(value, 0) === 1
}
