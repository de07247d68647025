/**
 * Go durations, as Kubernetes and the pool's spec write them (`90s`, `15m`, `1h30m`, `1.5h`, `0`):
 * the CRD's pattern says what is one, this module what it is worth in seconds.
 */
import { DURATION_PATTERN } from '../api/gpucellpool.ts'

const DURATION = new RegExp(DURATION_PATTERN)

/** Unit lengths in seconds of a Go duration. */
const UNIT_SECONDS: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, μs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 }

/** A Go duration (`90s`, `1h30m`, `1.5h`, `0`) in seconds, or undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  if (text.length > 64 || !DURATION.test(text)) return undefined
  if (text === '0') return 0
  let seconds = 0
  for (const [, amount, unit] of text.matchAll(/([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)/g)) {
    const factor = unit === undefined ? undefined : UNIT_SECONDS[unit]
    if (amount === undefined || factor === undefined) return undefined
    seconds += Number(amount) * factor
  }
  return Number.isFinite(seconds) ? seconds : undefined
}
