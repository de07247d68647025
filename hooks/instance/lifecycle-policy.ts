/**
 * An InstanceType's `spec.lifecycle` read into seconds (docs/lifecycle.md), and what the decision
 * reads off an Instance: its two annotations, parsed and bounded.
 *
 * The CRD's CEL rules refuse a malformed duration, but an InstanceType stored before them (or
 * with the rules off) reaches the hook as it is: every field is parsed again here, and one that
 * does not parse makes the type invalid with a message naming the field, as any other bad field.
 *
 * Choices where the spec is silent:
 * - A duration longer than {@link MAX_LIFECYCLE_SECONDS} (ten years) counts as ten years, so that
 *   every time the decision computes stays a valid date.
 * - Only an RFC 3339 time with a zone (`Z` or `+hh:mm`) is a postponement or a stop time; whatever
 *   else a tenant writes into an annotation is ignored, never echoed.
 */
import { DURATION_PATTERN } from '../api/gpucellpool.ts'
import { LIFECYCLE_DEFAULTS, type LifecycleSpec } from '../api/instancetype.ts'
import { STOP_REASONS, type StopReason } from '../api/instanceactivity.ts'
import { parseDuration } from '../api/duration.ts'
import { isRecord, ownValue } from '../k8s/objects.ts'

/** The tenant's postponement of an idle stop. */
export const KEEP_RUNNING_UNTIL_ANNOTATION = 'gpustack.ai/keep-running-until'

/** The longest duration the decision works with, seconds. */
export const MAX_LIFECYCLE_SECONDS = 10 * 365 * 24 * 3600

/** `spec.lifecycle` in seconds, defaults filled in. */
export interface Lifecycle {
  idleStopAfter?: number
  idleThreshold: number
  stopNotice: number
  maxRunDuration?: number
  maxPostpone: number
}

const DURATION_FIELDS = ['idleStopAfter', 'stopNotice', 'maxRunDuration', 'maxPostpone'] as const
const POSITIVE = new Set<string>(['idleStopAfter', 'maxRunDuration'])
const DURATION = new RegExp(DURATION_PATTERN)

/** Problems of a stored `spec.lifecycle` beyond its JSON schema, each naming the field. */
export function lifecycleProblems(lifecycle: unknown): string[] {
  if (!isRecord(lifecycle)) return []
  const problems: string[] = []
  for (const field of DURATION_FIELDS) {
    const value = ownValue(lifecycle, field)
    if (value === undefined) continue
    const seconds = typeof value === 'string' && DURATION.test(value) ? parseDuration(value) : undefined
    if (seconds === undefined) problems.push(`spec.lifecycle.${field} must be a duration such as 90s, 15m or 2h`)
    else if (POSITIVE.has(field) && seconds <= 0) problems.push(`spec.lifecycle.${field} must be a positive duration`)
  }
  return problems
}

function seconds(text: string | undefined): number | undefined {
  const value = text === undefined ? undefined : parseDuration(text)
  return value === undefined || value < 0 ? undefined : Math.min(value, MAX_LIFECYCLE_SECONDS)
}

/** The lifecycle in seconds; a field that does not parse counts as absent (or its default). */
export function resolveLifecycle(spec: LifecycleSpec): Lifecycle {
  const idle = seconds(spec.idleStopAfter)
  const max = seconds(spec.maxRunDuration)
  const threshold = spec.idleThreshold
  return {
    ...(idle !== undefined && idle > 0 ? { idleStopAfter: idle } : {}),
    idleThreshold:
      typeof threshold === 'number' && Number.isInteger(threshold) && threshold >= 0 && threshold <= 100
        ? threshold
        : LIFECYCLE_DEFAULTS.idleThreshold,
    stopNotice: seconds(spec.stopNotice) ?? (seconds(LIFECYCLE_DEFAULTS.stopNotice) as number),
    ...(max !== undefined && max > 0 ? { maxRunDuration: max } : {}),
    maxPostpone: seconds(spec.maxPostpone) ?? (seconds(LIFECYCLE_DEFAULTS.maxPostpone) as number)
  }
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/

/** Milliseconds of an RFC 3339 time with a zone, or undefined. */
export function parseRfc3339(value: unknown): number | undefined {
  if (typeof value !== 'string' || value.length > 40 || !RFC3339.test(value)) return undefined
  const ms = Date.parse(value.toUpperCase())
  return Number.isFinite(ms) && ms >= 0 && ms <= MAX_TIME_MS ? ms : undefined
}

/** The last instant an RFC 3339 `metav1.Time` can carry (9999-12-31T23:59:59Z). */
export const MAX_TIME_MS = 253402300799000

/** `ms` kept within what a status time can carry. */
export function clampTime(ms: number): number {
  return Math.min(Math.max(ms, 0), MAX_TIME_MS)
}

/** The annotation `gpustack.ai/stopped-by`, parsed: `<Idle|MaxRunDuration> <RFC 3339>`. */
export function parseStoppedBy(value: unknown): { reason: StopReason; at: number } | undefined {
  if (typeof value !== 'string' || value.length > 64) return undefined
  const parts = value.trim().split(/\s+/)
  if (parts.length !== 2) return undefined
  const [reason, time] = parts
  const at = parseRfc3339(time)
  const known = STOP_REASONS.find((r) => r === reason)
  return known !== undefined && at !== undefined ? { reason: known, at } : undefined
}

/** An annotation of the Instance by own property, when it is a string. */
export function annotation(annotations: unknown, key: string): string | undefined {
  const value = ownValue(annotations, key)
  return typeof value === 'string' ? value : undefined
}
