/**
 * Request ids unique across both listeners and across restarts: a random prefix drawn once per
 * process, then a counter shared by every app the process builds. "Look it up in the log" finds
 * exactly one request, even in logs gathered from many Pods over many restarts.
 */
import { randomBytes } from 'node:crypto'

/** This process's prefix: 48 random bits. */
const PREFIX = randomBytes(6).toString('base64url')
let counter = 0

/** The next request id of this process, e.g. `q3Vx9LkA-1f`. */
export function nextRequestId(): string {
  counter += 1
  return `${PREFIX}-${counter.toString(36)}`
}
