/**
 * Standard status conditions (`type`, `status`, `reason`, `message`, `lastTransitionTime`,
 * `observedGeneration`).
 *
 * A status must be a pure function of what was observed, or every sync writes it again. The one
 * clock-dependent field, `lastTransitionTime`, therefore changes only when the condition's status
 * changes: it is carried over from the parent's previous status and set to `now` only on a real
 * transition.
 */
import { isRecord } from './objects.ts'
import { apiTime } from './time.ts'

/** One condition as written to status. */
export interface Condition {
  type: string
  status: 'True' | 'False' | 'Unknown'
  reason: string
  message: string
  lastTransitionTime: string
  observedGeneration?: number
}

/** A condition as a hook decides it, before the transition time is known. */
export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>

/**
 * Stamps each condition with its transition time: the previous one when the status is the same
 * as in `previous`, `now` otherwise. Output order follows `next`.
 */
export function stampConditions(
  next: readonly ConditionInput[],
  previous: unknown,
  now: Date,
  observedGeneration: number | undefined
): Condition[] {
  const before = new Map<string, { status?: unknown; lastTransitionTime?: unknown }>()
  if (Array.isArray(previous)) {
    for (const c of previous as unknown[]) {
      if (isRecord(c) && typeof c.type === 'string') before.set(c.type, c)
    }
  }
  const stamp = apiTime(now)
  return next.map((c) => {
    const old = before.get(c.type)
    const kept = old !== undefined && old.status === c.status && typeof old.lastTransitionTime === 'string'
    const condition: Condition = {
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      lastTransitionTime: kept ? (old.lastTransitionTime as string) : stamp
    }
    if (observedGeneration !== undefined) condition.observedGeneration = observedGeneration
    return condition
  })
}
