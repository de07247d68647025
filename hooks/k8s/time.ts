/**
 * Times as the API server writes them, so a value a hook or the agent writes compares equal to
 * the one it reads back and a status written twice is byte-identical.
 */

/** RFC 3339 at second precision (`2026-03-01T10:00:00Z`): a `metav1.Time`. */
export function apiTime(time: Date): string {
  return time.toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** RFC 3339 at microsecond precision (`2026-03-01T10:00:00.123000Z`): a `metav1.MicroTime`, as a Lease's times are. */
export function apiMicroTime(time: Date): string {
  return time.toISOString().replace('Z', '000Z')
}
