/**
 * The condition StopScheduled in words a tenant can act on (docs/lifecycle.md): when the Instance
 * stops and why, the exact `kubectl annotate` that postpones an idle stop, the `kubectl patch` that
 * starts it again. Every value in a message is one the hook computed or parsed (times re-written
 * in RFC 3339, durations re-formatted); no text a tenant or the agent wrote is carried over.
 *
 * Reasons: True `Idle` or `MaxRunDuration` (the notice, then the stop requested); False
 * `ActivityUnknown` (no current observation: no idle stop is scheduled), `NotDue` (a stop time is
 * known, its notice has not begun), `NoStop` (the type sets neither duration), `NotRunning` (no
 * Pod runs) and `StoppedByLifecycle` (spec.stop true, set by the agent for the lifecycle).
 */
import type { StopReason } from '../api/instanceactivity.ts'
import type { ConditionInput } from '../k8s/conditions.ts'
import { apiTime, formatSeconds } from '../k8s/time.ts'
import type { Activity, LifecycleInput } from './lifecycle-observation.ts'
import { KEEP_RUNNING_UNTIL_ANNOTATION } from './lifecycle-policy.ts'

const TYPE = 'StopScheduled'

/** What the messages are made of. */
export interface Schedule {
  input: LifecycleInput
  idleSince: number | undefined
  activity: Activity
  postponed: { asked: number; firstObserved: number; until: number; clamped: boolean } | undefined
  postponedUntil: number | undefined
  stopAt: number | undefined
  reason: StopReason | undefined
}

const time = (ms: number): string => apiTime(new Date(ms))

/** The command that starts a stopped Instance again. */
export function startCommand(name: string, namespace: string): string {
  return `kubectl patch instance ${name} -n ${namespace} --type merge -p '{"spec":{"stop":false}}'`
}

function postponeCommand(s: Schedule, noticeTime: number): string {
  const { lifecycle, instanceName, namespace } = s.input
  if (lifecycle.maxPostpone <= 0) return `unless used (InstanceType ${s.input.typeName} allows no postponing)`
  // Seen at the earliest when the notice began, so a value up to here is never clamped.
  const until = time(noticeTime + lifecycle.maxPostpone * 1000)
  return (
    `unless used or postponed (at most ${formatSeconds(lifecycle.maxPostpone)}): ` +
    `kubectl annotate instance ${instanceName} -n ${namespace} --overwrite ${KEEP_RUNNING_UNTIL_ANNOTATION}=${until}`
  )
}

function postponedClause(s: Schedule): string {
  const p = s.postponed
  if (p === undefined || s.postponedUntil === undefined) return ''
  const clamped = p.clamped
    ? ` (clamped: it asks for ${time(p.asked)}, at most maxPostpone ${formatSeconds(s.input.lifecycle.maxPostpone)} ` +
      `after it was first seen at ${time(p.firstObserved)})`
    : ''
  return `; postponed until ${time(s.postponedUntil)} by ${KEEP_RUNNING_UNTIL_ANNOTATION}${clamped}`
}

function idleClause(s: Schedule): string {
  return s.idleSince !== undefined ? `no GPU activity since ${time(s.idleSince)}` : 'no GPU activity'
}

function maxRunClause(s: Schedule): string {
  const max = s.input.lifecycle.maxRunDuration ?? 0
  return `Pod ${s.input.pod.name} started at ${time(s.input.pod.start)} and InstanceType ${s.input.typeName} runs none longer than ${formatSeconds(max)}`
}

/** True: the notice, or the stop requested. */
export function scheduledCondition(
  s: Schedule,
  requested: { reason: StopReason; at: number } | undefined,
  noticeTime: number
): ConditionInput {
  const { instanceName, namespace } = s.input
  if (requested !== undefined) {
    const why = requested.reason === 'Idle' ? idleClause(s) : maxRunClause(s)
    return {
      type: TYPE,
      status: 'True',
      reason: requested.reason,
      message:
        `The stop came due at ${time(requested.at)} (${why}); the agent stops the Instance (spec.stop: true), ` +
        `its Service and node ports stay. Start it again with: ${startCommand(instanceName, namespace)}.`
    }
  }
  const stopAt = time(s.stopAt ?? noticeTime)
  if (s.reason === 'MaxRunDuration') {
    return {
      type: TYPE,
      status: 'True',
      reason: 'MaxRunDuration',
      message: `${maxRunClause(s)}: it stops at ${stopAt}, which cannot be postponed; start it again afterwards with: ${startCommand(instanceName, namespace)}.`
    }
  }
  return {
    type: TYPE,
    status: 'True',
    reason: 'Idle',
    message: `${capital(idleClause(s))}${postponedClause(s)}; stops at ${stopAt} ${postponeCommand(s, noticeTime)}.`
  }
}

/** False: why no stop is announced yet. */
export function waitingCondition(s: Schedule): ConditionInput {
  const { lifecycle, typeName } = s.input
  const maxRun = s.reason === 'MaxRunDuration' && s.stopAt !== undefined ? `; ${maxRunClause(s)}: it stops at ${time(s.stopAt)}` : ''
  if (lifecycle.idleStopAfter !== undefined && !s.activity.known) {
    return {
      type: TYPE,
      status: 'False',
      reason: 'ActivityUnknown',
      message: `GPU activity is unknown (${s.activity.why}); no idle stop is scheduled until it is observed again${maxRun}.`
    }
  }
  if (s.stopAt === undefined || s.reason === undefined) {
    return {
      type: TYPE,
      status: 'False',
      reason: 'NoStop',
      message: `InstanceType ${typeName} sets neither idleStopAfter nor maxRunDuration; nothing stops the Instance.`
    }
  }
  const why = s.reason === 'Idle' ? `${idleClause(s)}${postponedClause(s)}` : maxRunClause(s)
  const from = time(s.stopAt - lifecycle.stopNotice * 1000)
  return {
    type: TYPE,
    status: 'False',
    reason: 'NotDue',
    message: `Stops at ${time(s.stopAt)} as things stand (${why}); this condition turns True at ${from}.`
  }
}

/** False: no Pod runs; `stoppedBy` when the agent stopped it for the lifecycle. */
export function notRunningCondition(
  name: string,
  namespace: string,
  typeName: string,
  stoppedBy: { reason: StopReason; at: number } | undefined
): ConditionInput {
  if (stoppedBy !== undefined) {
    const why = stoppedBy.reason === 'Idle' ? 'idle for idleStopAfter' : 'it reached maxRunDuration'
    return {
      type: TYPE,
      status: 'False',
      reason: 'StoppedByLifecycle',
      message: `Stopped by its lifecycle at ${time(stoppedBy.at)} (${why}); start it again with: ${startCommand(name, namespace)}.`
    }
  }
  return {
    type: TYPE,
    status: 'False',
    reason: 'NotRunning',
    message: `No Pod of the Instance runs; the lifecycle of InstanceType ${typeName} applies from its start.`
  }
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}
