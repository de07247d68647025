/**
 * What keeps the agent's Events few (docs/observability.md, "Events"), in the manner of
 * client-go's Event correlator and spam filter:
 *
 * - deduplication: the same Event (object, type, reason, message) happening again within
 *   `dedupMs` of its last occurrence is counted on the Event already written (`count` + 1,
 *   `lastTimestamp`), not written anew, so `kubectl describe` shows it once, "x2";
 * - rate limit: each object gets at most `burst` writes at once and one more per `refillMs`
 *   after that (a token bucket); a write past it is left out.
 *
 * The decision is pure, given the time; the memory is bounded (`maxKeys` of each kind, the
 * oldest forgotten first), so no stream of Events grows it without limit.
 */

/** How often Events may be written. */
export interface EventLimits {
  burst: number
  refillMs: number
  dedupMs: number
  maxKeys: number
}

/** 20 writes at once per object, then one per 30 s; the same Event counted on its first within 10 minutes. */
export const DEFAULT_EVENT_LIMITS: EventLimits = { burst: 20, refillMs: 30_000, dedupMs: 10 * 60_000, maxKeys: 2000 }

/** What to do with an Event: create it, count it on the Event `name` (to `count`), or leave it out. */
export type Admission = { action: 'create' } | { action: 'recount'; name: string; count: number } | { action: 'limited' }

/** The Event an occurrence is one of. */
export interface EventKey {
  objectUid: string
  type: string
  reason: string
  message: string
}

/** The limiter of one agent process. */
export class EventLimiter {
  private readonly written = new Map<string, { name: string; count: number; atMs: number }>()
  private readonly buckets = new Map<string, { tokens: number; atMs: number }>()

  constructor(private readonly limits: EventLimits = DEFAULT_EVENT_LIMITS) {}

  /** What to do with one occurrence of `event` at `nowMs`; anything but `limited` takes a token. */
  admit(event: EventKey, nowMs: number): Admission {
    const bucket = this.buckets.get(event.objectUid) ?? { tokens: this.limits.burst, atMs: nowMs }
    const tokens = Math.min(this.limits.burst, bucket.tokens + Math.max(0, nowMs - bucket.atMs) / this.limits.refillMs)
    if (tokens < 1) {
      remember(this.buckets, event.objectUid, { tokens, atMs: nowMs }, this.limits.maxKeys)
      return { action: 'limited' }
    }
    remember(this.buckets, event.objectUid, { tokens: tokens - 1, atMs: nowMs }, this.limits.maxKeys)
    const last = this.written.get(keyOf(event))
    if (last !== undefined && nowMs - last.atMs < this.limits.dedupMs) return { action: 'recount', name: last.name, count: last.count + 1 }
    return { action: 'create' }
  }

  /** The API server has the Event `name` with `count` occurrences, the last at `nowMs`. */
  wrote(event: EventKey, name: string, count: number, nowMs: number): void {
    remember(this.written, keyOf(event), { name, count, atMs: nowMs }, this.limits.maxKeys)
  }
}

function keyOf(event: EventKey): string {
  return JSON.stringify([event.objectUid, event.type, event.reason, event.message])
}

/** Sets `key` as the newest entry, dropping the oldest past `max`. */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key)
  map.set(key, value)
  while (map.size > max) {
    const oldest = map.keys().next()
    if (oldest.done === true) break
    map.delete(oldest.value)
  }
}
