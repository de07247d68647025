/**
 * What the decision reads out of the observed Pod and InstanceActivity (docs/lifecycle.md), each
 * field checked: a status the agent wrote for another Pod, a stale one, one with `Observed` not
 * True, or any field of the wrong shape makes the activity unknown, and says why in words of its
 * own (never the agent's or a tenant's text).
 *
 * Choices where the spec is silent:
 * - An observation is current while `now` is at most three rounds past its `observedTime`; a
 *   `roundSeconds` that is absent or out of range counts as 60. An `observedTime` in the future
 *   (clock skew) counts as current.
 * - A `lastActiveTime` after `observedTime` counts as `observedTime`; an absent one means no
 *   activity was ever seen, so the idle clock runs from the Pod's start.
 * - The record the hook keeps in the activity's spec (notice, postponement, stop) counts only for
 *   the same Instance uid and the same Pod uid: a new Pod starts with a clean record.
 */
import { OBSERVED_REASONS, STOP_REASONS, type StopReason } from '../api/instanceactivity.ts'
import { asList, asRecord, asText, type KubeObject } from '../k8s/objects.ts'
import { parseRfc3339, type Lifecycle } from './lifecycle-policy.ts'

/** The round assumed when the agent states none, seconds. */
export const DEFAULT_ROUND_SECONDS = 60
/** An observation older than this many rounds is stale. */
export const STALE_ROUNDS = 3

const UID = /^[A-Za-z0-9-]{1,128}$/

/** The running Pod as the decision reads it. */
export interface RunningPod {
  name: string
  uid: string
  /** `status.startTime`, ms. */
  start: number
}

/** The Pod, when it runs: phase Running, not being deleted, with a readable uid and start time. */
export function runningPod(pod: KubeObject | undefined): RunningPod | undefined {
  if (pod === undefined || asText(pod.metadata.deletionTimestamp) !== undefined) return undefined
  const status = asRecord(pod.status)
  const uid = pod.metadata.uid
  const start = parseRfc3339(status.startTime)
  const name = pod.metadata.name
  if (status.phase !== 'Running' || typeof uid !== 'string' || !UID.test(uid) || start === undefined) return undefined
  return typeof name === 'string' ? { name, uid, start } : undefined
}

/** The activity, as far as it is known. */
export type Activity =
  { known: true; lastActive: number | undefined; observed: number; staleAt: number } | { known: false; why: string; lastActive?: number }

/** The hook's own record in the activity's spec, for this Instance and Pod. */
export interface ActivityRecord {
  noticeTime?: number
  postponement?: { until: number; firstObserved: number }
  stop?: { reason: StopReason; at: number }
}

/** Whether the observed activity belongs to this Instance and Pod. */
function sameOwner(activity: KubeObject | undefined, instanceUID: string, podUID: string): boolean {
  const spec = asRecord(activity?.spec)
  return spec.instanceUID === instanceUID && spec.podUID === podUID
}

/** The hook's record, read back; empty for another Instance or Pod. */
export function readRecord(activity: KubeObject | undefined, instanceUID: string, podUID: string): ActivityRecord {
  if (!sameOwner(activity, instanceUID, podUID)) return {}
  const spec = asRecord(activity?.spec)
  const record: ActivityRecord = {}
  const notice = parseRfc3339(spec.noticeTime)
  if (notice !== undefined) record.noticeTime = notice
  const postponement = asRecord(spec.postponement)
  const until = parseRfc3339(postponement.until)
  const first = parseRfc3339(postponement.firstObservedTime)
  if (until !== undefined && first !== undefined) record.postponement = { until, firstObserved: first }
  const stop = asRecord(spec.stop)
  const reason = STOP_REASONS.find((r) => r === stop.reason)
  const at = parseRfc3339(stop.at)
  if (stop.requested === true && reason !== undefined && at !== undefined) record.stop = { reason, at }
  return record
}

/** The `Observed` condition's reason, when it is one the agent documents. */
function observedReason(conditions: unknown): { status: unknown; reason: string | undefined } {
  const observed = asList(conditions)
    .map(asRecord)
    .find((c) => c.type === 'Observed')
  if (observed === undefined) return { status: undefined, reason: undefined }
  return { status: observed.status, reason: OBSERVED_REASONS.find((r) => r === observed.reason) }
}

const WHY_NOT_OBSERVED: Record<string, string> = {
  PrometheusUnreachable: 'the agent cannot reach Prometheus',
  NoSeries: 'Prometheus has no GPU utilization series for this Instance',
  PodChanged: 'the agent sees another Pod than the one recorded'
}

/** What the agent observed for `podUID`, as of `now`. */
export function readActivity(activity: KubeObject | undefined, podUID: string, now: number): Activity {
  const status = asRecord(activity?.status)
  if (activity === undefined || Object.keys(status).length === 0) {
    return { known: false, why: 'the agent has not reported on its InstanceActivity yet' }
  }
  if (status.podUID !== podUID) return { known: false, why: 'the last observation is of another Pod' }
  const lastRaw = status.lastActiveTime
  const lastActive = parseRfc3339(lastRaw)
  const observed = parseRfc3339(status.observedTime)
  const { status: conditionStatus, reason } = observedReason(status.conditions)
  const keep = lastActive !== undefined ? { lastActive } : {}
  if (conditionStatus !== 'True') {
    const why = conditionStatus === undefined ? undefined : WHY_NOT_OBSERVED[reason ?? '']
    return { known: false, why: why ?? 'the agent reports no current observation (condition Observed is not True)', ...keep }
  }
  if (observed === undefined) return { known: false, why: 'the observation has no readable observedTime', ...keep }
  if (lastRaw !== undefined && lastActive === undefined) return { known: false, why: 'the observation has no readable lastActiveTime' }
  const round =
    typeof status.roundSeconds === 'number' && Number.isInteger(status.roundSeconds) && status.roundSeconds >= 1
      ? Math.min(status.roundSeconds, 86400)
      : DEFAULT_ROUND_SECONDS
  const staleAt = observed + STALE_ROUNDS * round * 1000
  if (now > staleAt) {
    return { known: false, why: `the last observation is older than three rounds of ${round}s`, ...keep }
  }
  return { known: true, lastActive: lastActive === undefined ? undefined : Math.min(lastActive, observed), observed, staleAt }
}

/** Everything the decision reads. */
export interface LifecycleInput {
  lifecycle: Lifecycle
  typeName: string
  instanceName: string
  namespace: string
  /** The Instance's uid; without one no InstanceActivity is answered. */
  instanceUID: string | undefined
  /** The Pod when it runs (lifecycle-observation.ts `runningPod`). */
  pod: RunningPod
  /** The observed InstanceActivity named after the Instance. */
  activity: KubeObject | undefined
  annotations: unknown
  now: Date
}
