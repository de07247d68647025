/**
 * The activity controller's decisions, pure (docs/workload.md, "Instance activity"):
 *
 * - {@link decideStatus}: `(InstanceActivity, the round's answer, memory, now) → status, write?`.
 *   A status is written when something other than the time changed (the Pod, the condition,
 *   active against idle, the round, the source) and otherwise at the latest when the next round
 *   would leave `observedTime` older than the refresh interval, which is what `roundSeconds` says:
 *   the hook holds an observation older than three of them as stale. Prometheus unreachable: the
 *   condition turns False once, and nothing it did not see is written (no `observedTime`, no
 *   activity, no idleness).
 * - {@link decideStop}: `(InstanceActivity, Instance, Pod, now) → stop, ignore or nothing`. A
 *   stop is carried out only when the hook requested it, the InstanceActivity is owned by the
 *   Instance it names, that Instance still has the uid and its Pod the uid the request was made
 *   for, and the Instance is not stopped already (nor was for this request).
 */
import { STOPPED_BY_ANNOTATION } from '../../api/instanceactivity.ts'
import { Value } from '@sinclair/typebox/value'
import { WORKER_API_VERSION } from '../../api/instance.ts'
import { InstanceActivitySpecSchema, type InstanceActivitySpec, type InstanceActivityStatus } from '../../api/instanceactivity.ts'
import { stampConditions, type ConditionInput } from '../../k8s/conditions.ts'
import { asText, isRecord, ownValue } from '../../k8s/objects.ts'
import { apiTime, parseTime } from '../../k8s/time.ts'
import { seriesKey, type Answer } from './prometheus.ts'

/** The Event reasons of a stop, by the reason of the request. */
export const STOP_EVENT_REASONS = { Idle: 'IdleStopped', MaxRunDuration: 'MaxRunDurationReached' } as const

/** An InstanceActivity as the controller reads it. */
export interface ActivityInput {
  namespace: string
  name: string
  resourceVersion: string
  /** The uid of its controller owner reference when that is an Instance. */
  ownerUID: string | undefined
  spec: InstanceActivitySpec
  status: InstanceActivityStatus
}

/** What the controller remembers of one InstanceActivity between rounds (for the spec's Pod). */
export interface Memory {
  podUID: string
  /** The last round that saw the Instance above its threshold. */
  lastActiveMs?: number
  /** The uid of the Pod a stop found instead of the spec's ('' when there was none). */
  podChanged?: string
}

/** The round as every InstanceActivity sees it. */
export interface Round {
  answer: Answer
  nowMs: number
  roundMs: number
  refreshMs: number
  source: string
}

/** The InstanceActivity as the controller reads it, or why it is not read. */
export function readActivity(object: unknown): ActivityInput | string {
  const metadata = ownValue(object, 'metadata')
  const namespace = asText(ownValue(metadata, 'namespace'))
  const name = asText(ownValue(metadata, 'name'))
  if (namespace === undefined || name === undefined) return 'an InstanceActivity without a name and namespace'
  const spec = ownValue(object, 'spec')
  if (!Value.Check(InstanceActivitySpecSchema, spec)) {
    const first = Value.Errors(InstanceActivitySpecSchema, spec).First()
    return `spec${first?.path.replaceAll('/', '.') ?? ''}: ${first?.message ?? 'not an InstanceActivity spec'}`
  }
  const refs = ownValue(metadata, 'ownerReferences')
  const owner: unknown = Array.isArray(refs)
    ? (refs as unknown[]).find((r) => isRecord(r) && r.controller === true && r.kind === 'Instance' && r.apiVersion === WORKER_API_VERSION)
    : undefined
  const status = ownValue(object, 'status')
  const text = (key: string): string | undefined => asText(ownValue(status, key))
  const roundSeconds = ownValue(status, 'roundSeconds')
  const conditions = ownValue(status, 'conditions')
  return {
    namespace,
    name,
    resourceVersion: asText(ownValue(metadata, 'resourceVersion')) ?? '',
    ownerUID: asText(ownValue(owner, 'uid')),
    spec: structuredClone(spec),
    status: {
      ...(text('podUID') !== undefined ? { podUID: text('podUID') } : {}),
      ...(text('lastActiveTime') !== undefined ? { lastActiveTime: text('lastActiveTime') } : {}),
      ...(text('observedTime') !== undefined ? { observedTime: text('observedTime') } : {}),
      ...(typeof roundSeconds === 'number' ? { roundSeconds } : {}),
      ...(text('source') !== undefined ? { source: text('source') } : {}),
      ...(Array.isArray(conditions) ? { conditions: structuredClone(conditions.filter(isRecord)) as never } : {})
    }
  }
}

/** The status of one InstanceActivity after a round, whether to write it, and what to remember. */
export interface StatusDecision {
  status: InstanceActivityStatus
  write: boolean
  memory: Memory
  /** Active, idle or unknown this round (for logs and metrics). */
  seen: 'active' | 'idle' | 'noSeries' | 'unreachable' | 'podChanged'
}

/** Decides one InstanceActivity's status after a round. */
export function decideStatus(input: ActivityInput, round: Round, remembered: Memory | undefined): StatusDecision {
  const { spec, status: previous } = input
  const now = new Date(round.nowMs)
  const memory: Memory = remembered?.podUID === spec.podUID ? { ...remembered } : { podUID: spec.podUID }
  // Only what this agent could have written counts: a time it cannot have seen yet is not read.
  const past = (value: string | undefined): number | undefined => {
    const ms = parseTime(value)
    return ms !== undefined && ms <= round.nowMs ? ms : undefined
  }
  const previousActive = past(previous.lastActiveTime)
  const previousObserved = past(previous.observedTime)
  let seen: StatusDecision['seen']
  let condition: ConditionInput
  const answer = round.answer
  const value = answer.ok ? answer.values.get(seriesKey(input.namespace, input.name, spec.instanceUID)) : undefined
  if (memory.podChanged !== undefined) {
    seen = 'podChanged'
    const found = memory.podChanged === '' ? 'no Pod' : `Pod uid ${memory.podChanged}`
    condition = observed('False', 'PodChanged', `Pod ${spec.podName} is ${found}, not ${spec.podUID}: waiting for the hook's new spec`)
  } else if (!answer.ok) {
    seen = 'unreachable'
    condition = observed('False', 'PrometheusUnreachable', `Prometheus could not be read: ${answer.message}`)
  } else if (value === undefined) {
    seen = 'noSeries'
    condition = observed('False', 'NoSeries', 'Prometheus has no utilization series for this Instance over the last round')
  } else {
    seen = value > spec.idleThreshold ? 'active' : 'idle'
    if (seen === 'active') memory.lastActiveMs = round.nowMs
    const where = seen === 'active' ? 'above' : 'at or below'
    condition = observed('True', 'Observed', `the busiest accelerator over the last round was ${where} ${spec.idleThreshold}% of its cores`)
  }
  const observedNow = seen === 'active' || seen === 'idle' || seen === 'noSeries'
  const activeMs = Math.max(previousActive ?? Number.NEGATIVE_INFINITY, memory.lastActiveMs ?? Number.NEGATIVE_INFINITY)
  const observedMs = observedNow ? round.nowMs : previousObserved
  const status: InstanceActivityStatus = {
    podUID: spec.podUID,
    ...(Number.isFinite(activeMs) ? { lastActiveTime: apiTime(new Date(activeMs)) } : {}),
    ...(observedMs !== undefined ? { observedTime: apiTime(new Date(observedMs)) } : {}),
    roundSeconds: Math.round(round.refreshMs / 1000),
    source: round.source.slice(0, 1024),
    conditions: stampConditions([condition], previous.conditions, now, undefined)
  }
  const before = previous.conditions?.find((c) => c.type === 'Observed')
  // Active at the last write: that write stamped the activity and the observation at once.
  const wasActive = previousActive !== undefined && previousActive === previousObserved
  const changed =
    previous.podUID !== spec.podUID ||
    before?.status !== condition.status ||
    before.reason !== condition.reason ||
    previous.roundSeconds !== status.roundSeconds ||
    previous.source !== status.source ||
    (previous.lastActiveTime === undefined) !== (status.lastActiveTime === undefined) ||
    (observedNow && seen !== 'noSeries' && wasActive !== (seen === 'active'))
  const refreshDue = observedNow && (previousObserved === undefined || round.nowMs + round.roundMs - previousObserved >= round.refreshMs)
  return { status, write: changed || refreshDue, memory, seen }
}

function observed(status: 'True' | 'False', reason: string, message: string): ConditionInput {
  return { type: 'Observed', status, reason, message }
}

/** One JSON patch operation. */
export type PatchOp = { op: 'test' | 'add'; path: string; value: unknown }

/** What to do about a stop request. */
export type StopDecision =
  | { kind: 'none' }
  | { kind: 'ignore'; why: string; podChanged?: string }
  | { kind: 'done'; why: string }
  | { kind: 'stop'; instance: { namespace: string; name: string; uid: string }; patch: PatchOp[]; reason: string; message: string }

/**
 * Decides a stop request. `instance` and `pod` are as read now (undefined: not found). The patch
 * holds if the Instance is still the one read: it tests the uid and the resourceVersion, so a
 * change in between (an annotation added, the Instance replaced) makes it fail and the next look
 * decides again.
 */
export function decideStop(input: ActivityInput, instance: unknown, pod: unknown, nowMs: number): StopDecision {
  const { spec } = input
  if (spec.stop?.requested !== true) return { kind: 'none' }
  const request = spec.stop
  if (input.ownerUID !== spec.instanceUID)
    return { kind: 'ignore', why: 'the InstanceActivity is not controlled by the Instance of spec.instanceUID' }
  const metadata = ownValue(instance, 'metadata')
  const uid = asText(ownValue(metadata, 'uid'))
  if (instance === undefined) return { kind: 'ignore', why: `Instance ${input.name} does not exist` }
  if (uid !== spec.instanceUID)
    return { kind: 'ignore', why: `Instance ${input.name} is uid ${uid ?? '(none)'}, the request is for ${spec.instanceUID}` }
  if (ownValue(metadata, 'deletionTimestamp') !== undefined) return { kind: 'ignore', why: `Instance ${input.name} is being deleted` }
  const instanceSpec = ownValue(instance, 'spec')
  if (!isRecord(instanceSpec)) return { kind: 'ignore', why: `Instance ${input.name} has no spec` }
  if (instanceSpec.stop === true) return { kind: 'done', why: 'the Instance is stopped already' }
  const annotations = ownValue(metadata, 'annotations')
  const stoppedBy = asText(ownValue(annotations, STOPPED_BY_ANNOTATION))
  const stoppedAt = parseTime(stoppedBy?.split(' ')[1])
  const requestedAt = parseTime(request.at)
  if (stoppedAt !== undefined && requestedAt !== undefined && stoppedAt >= requestedAt) {
    return { kind: 'done', why: `this request was carried out at ${apiTime(new Date(stoppedAt))} and the Instance started again since` }
  }
  const podUID = asText(ownValue(ownValue(pod, 'metadata'), 'uid'))
  if (podUID !== spec.podUID) {
    const found = podUID === undefined ? 'no Pod' : `Pod uid ${podUID}`
    return { kind: 'ignore', why: `Pod ${spec.podName} is ${found}, the request is for ${spec.podUID}`, podChanged: podUID ?? '' }
  }
  const stamp = `${request.reason} ${apiTime(new Date(nowMs))}`
  const patch: PatchOp[] = [
    { op: 'test', path: '/metadata/uid', value: uid },
    { op: 'test', path: '/metadata/resourceVersion', value: asText(ownValue(metadata, 'resourceVersion')) ?? '' },
    isRecord(annotations)
      ? { op: 'add', path: `/metadata/annotations/${STOPPED_BY_ANNOTATION.replaceAll('~', '~0').replaceAll('/', '~1')}`, value: stamp }
      : { op: 'add', path: '/metadata/annotations', value: { [STOPPED_BY_ANNOTATION]: stamp } },
    { op: 'add', path: '/spec/stop', value: true }
  ]
  const message =
    request.reason === 'Idle'
      ? `stopped: no GPU activity above ${spec.idleThreshold}% (stop due at ${request.at}); the Service, its node ports and a persistent workspace are kept; start it again with spec.stop: false`
      : `stopped: its maximum run duration was reached at ${request.at}; the Service, its node ports and a persistent workspace are kept; start it again with spec.stop: false`
  return {
    kind: 'stop',
    instance: { namespace: input.namespace, name: input.name, uid },
    patch,
    reason: STOP_EVENT_REASONS[request.reason],
    message
  }
}
