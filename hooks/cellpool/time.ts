/**
 * Times as the pool's status writes and reads them, and durations as people write them.
 */

/** `now` as status stamps times (seconds, `Z`). */
export function stamp(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** A duration in seconds as people write it (`15m`, `90s`, `1h30m`). */
export function formatSeconds(seconds: number): string {
  if (seconds <= 0) return '0s'
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = Math.round(seconds % 60)
  return `${h > 0 ? `${h}h` : ''}${m > 0 ? `${m}m` : ''}${s > 0 ? `${s}s` : ''}`
}

/** Milliseconds of an RFC 3339 time, or undefined when unreadable. */
export function parseTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const ms = Date.parse(value)
  return Number.isNaN(ms) ? undefined : ms
}
