/**
 * Times as the API server writes them, so a value a hook or the agent writes compares equal to
 * the one it reads back and a status written twice is byte-identical; times as a status reads
 * them back, and durations as people write them.
 */

/** RFC 3339 at second precision (`2026-03-01T10:00:00Z`): a `metav1.Time`. */
export function apiTime(time: Date): string {
  return time.toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** RFC 3339 at microsecond precision (`2026-03-01T10:00:00.123000Z`): a `metav1.MicroTime`, as a Lease's times are. */
export function apiMicroTime(time: Date): string {
  return time.toISOString().replace('Z', '000Z')
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
