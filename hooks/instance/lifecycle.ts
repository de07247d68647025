/**
 * The lifecycle decision (docs/lifecycle.md): from the type's `spec.lifecycle`, the running Pod,
 * the observed InstanceActivity, the Instance's annotations and `now`, the Instance's
 * `status.lifecycle`, its condition StopScheduled, the InstanceActivity to answer and when to be
 * called again. Pure: every time it writes is one it read or one of the boundaries below, so a
 * resync of an unchanged Instance answers the same, except when `now` crosses a boundary.
 *
 * The rules, and the choices where the spec is silent:
 * - Stop times. Idle: the later of the Pod's start and `lastActiveTime`, plus `idleStopAfter`,
 *   known only with a current observation; missing data never schedules an idle stop.
 *   MaxRunDuration: the Pod's start plus `maxRunDuration`, known always. The earlier counts; on a
 *   tie MaxRunDuration (it cannot be postponed).
 * - Notice. StopScheduled turns True at `stopAt - stopNotice`. The first sync that says so
 *   records `noticeTime` (now) in the InstanceActivity's spec, and the stop is requested no sooner
 *   than `noticeTime + stopNotice`, whatever the stop time says: a type whose new durations put
 *   the stop in the past, or an observation that returns after a gap and shows the Instance idle
 *   for long, still gives the tenant the full notice. Whenever StopScheduled is not True the
 *   record is dropped, so a notice interrupted (activity came back, the data went missing) is
 *   given again in full.
 * - Postponing. The annotation `gpustack.ai/keep-running-until` moves an idle stop to its time,
 *   at most `maxPostpone` after the hook first saw that value (recorded in the spec; a new value
 *   is a new postponement, recorded anew); a later value is clamped and StopScheduled says so.
 *   `maxPostpone: 0` turns it off. It never moves a MaxRunDuration stop.
 * - Once requested, a stop stays requested for that Pod: activity or a postponement seen after
 *   the stop came due changes nothing (the agent may already be stopping it, and a stop that
 *   could be taken back would race it). A new Pod starts with a clean record; a type without a
 *   lifecycle has no InstanceActivity at all.
 * - `resyncAfterSeconds`: the next boundary after `now` (notice start, stop time, the end of the
 *   notice, the moment the observation turns stale, a postponement's end), rounded up to a second.
 */
import type { InstanceStatus } from '../api/instance.ts'
import { WORKER_API_VERSION } from '../api/instance.ts'
import type { InstanceActivitySpec, StopReason } from '../api/instanceactivity.ts'
import type { ConditionInput } from '../k8s/conditions.ts'
import { MANAGED_BY, MANAGED_BY_LABEL, PART_OF_LABEL } from '../k8s/labels.ts'
import type { KubeObject } from '../k8s/objects.ts'
import { apiTime } from '../k8s/time.ts'
import { readActivity, readRecord, type LifecycleInput } from './lifecycle-observation.ts'
import { KEEP_RUNNING_UNTIL_ANNOTATION, annotation, clampTime, parseRfc3339 } from './lifecycle-policy.ts'
import { scheduledCondition, waitingCondition, type Schedule } from './lifecycle-messages.ts'

/** The condition type. */
export const STOP_SCHEDULED = 'StopScheduled'

/** What the decision answers. */
export interface LifecycleDecision {
  status: NonNullable<InstanceStatus['lifecycle']>
  condition: ConditionInput
  activity: KubeObject | undefined
  resyncAfterSeconds: number | undefined
}

/** The postponement in force, from the annotation and the record. */
function postponement(input: LifecycleInput, recorded: { until: number; firstObserved: number } | undefined, now: number) {
  if (input.lifecycle.maxPostpone <= 0) return undefined
  const asked = parseRfc3339(annotation(input.annotations, KEEP_RUNNING_UNTIL_ANNOTATION))
  if (asked === undefined) return undefined
  // At the second, as the record stores it, so that the record read back compares equal.
  const until = Math.floor(asked / 1000) * 1000
  const first = recorded !== undefined && recorded.until === until && recorded.firstObserved <= now ? recorded.firstObserved : now
  const bound = clampTime(first + input.lifecycle.maxPostpone * 1000)
  return { asked: until, firstObserved: first, until: Math.min(until, bound), clamped: until > bound }
}

/** The decision. */
export function decideLifecycle(input: LifecycleInput): LifecycleDecision {
  // At the second, as every time written is: a time read back from the record compares equal.
  const now = Math.floor(input.now.getTime() / 1000) * 1000
  const { lifecycle, pod } = input
  const uid = input.instanceUID
  const record = uid === undefined ? {} : readRecord(input.activity, uid, pod.uid)
  const activity = readActivity(input.activity, pod.uid, now)
  const postponed = postponement(input, record.postponement, now)
  const lastActive = activity.lastActive
  const idleSince = lastActive === undefined ? pod.start : Math.max(pod.start, lastActive)

  let idleAt: number | undefined
  let postponedUntil: number | undefined
  if (lifecycle.idleStopAfter !== undefined && activity.known) {
    idleAt = clampTime(idleSince + lifecycle.idleStopAfter * 1000)
    if (postponed !== undefined && postponed.until > idleAt) {
      postponedUntil = postponed.until
      idleAt = postponed.until
    }
  }
  const maxAt = lifecycle.maxRunDuration !== undefined ? clampTime(pod.start + lifecycle.maxRunDuration * 1000) : undefined
  let stopAt: number | undefined
  let reason: StopReason | undefined
  if (maxAt !== undefined && (idleAt === undefined || maxAt <= idleAt)) [stopAt, reason] = [maxAt, 'MaxRunDuration']
  else if (idleAt !== undefined) [stopAt, reason] = [idleAt, 'Idle']

  const notice = lifecycle.stopNotice * 1000
  const boundaries: number[] = []
  if (activity.known) boundaries.push(activity.staleAt + 1000)
  if (postponedUntil !== undefined) boundaries.push(postponedUntil)
  const schedule: Schedule = {
    input,
    idleSince: activity.known || lastActive !== undefined ? idleSince : undefined,
    activity,
    postponed,
    postponedUntil,
    stopAt,
    reason
  }

  let noticeTime: number | undefined
  let requested = record.stop
  if (requested === undefined && stopAt !== undefined && reason !== undefined) {
    const noticeFrom = stopAt - notice
    if (now >= noticeFrom) {
      noticeTime = record.noticeTime !== undefined && record.noticeTime <= now ? record.noticeTime : now
      const due = Math.max(stopAt, noticeTime + notice)
      schedule.stopAt = due
      if (now >= due) requested = { reason, at: due }
      else boundaries.push(due)
    } else boundaries.push(noticeFrom)
  }

  const status: LifecycleDecision['status'] = {}
  if (schedule.idleSince !== undefined) status.idleSince = apiTime(new Date(schedule.idleSince))
  if (requested !== undefined) {
    status.stopAt = apiTime(new Date(requested.at))
    status.stopReason = requested.reason
    status.stopRequested = true
  } else if (schedule.stopAt !== undefined && reason !== undefined) {
    status.stopAt = apiTime(new Date(schedule.stopAt))
    status.stopReason = reason
  }
  if (postponedUntil !== undefined) status.postponedUntil = apiTime(new Date(postponedUntil))

  const condition =
    requested !== undefined || noticeTime !== undefined
      ? scheduledCondition(schedule, requested, noticeTime ?? now)
      : waitingCondition(schedule)
  const spec: InstanceActivitySpec = {
    instanceUID: uid ?? '',
    podName: pod.name,
    podUID: pod.uid,
    idleThreshold: lifecycle.idleThreshold
  }
  if (requested === undefined && noticeTime !== undefined) spec.noticeTime = apiTime(new Date(noticeTime))
  if (postponed !== undefined) {
    spec.postponement = { until: apiTime(new Date(postponed.asked)), firstObservedTime: apiTime(new Date(postponed.firstObserved)) }
  }
  if (requested !== undefined) spec.stop = { requested: true, reason: requested.reason, at: apiTime(new Date(requested.at)) }
  const next = requested === undefined ? boundaries.filter((b) => b > now).sort((a, b) => a - b)[0] : undefined
  return {
    status,
    condition,
    activity: uid === undefined ? undefined : activityObject(input, spec),
    resyncAfterSeconds: next === undefined ? undefined : Math.max(1, Math.ceil((next - now) / 1000))
  }
}

/** The InstanceActivity child. */
function activityObject(input: LifecycleInput, spec: InstanceActivitySpec): KubeObject {
  return {
    apiVersion: WORKER_API_VERSION,
    kind: 'InstanceActivity',
    metadata: {
      name: input.instanceName,
      namespace: input.namespace,
      labels: { [PART_OF_LABEL]: input.instanceName, [MANAGED_BY_LABEL]: MANAGED_BY }
    },
    spec
  }
}
