/**
 * What Kueue did to an Instance's Pod, read from the Pod alone (docs/access.md, "Quota and
 * queueing"), and the conditions `Admitted` and `Evicted` that say it.
 *
 * Kueue's Pod integration gates a Pod that carries `kueue.x-k8s.io/queue-name` with the scheduling
 * gate `kueue.x-k8s.io/admission` and lifts the gate once the Pod's Workload is admitted. To evict
 * an admitted Pod it sets the Pod condition `TerminationTarget=True` (reason
 * `WorkloadEvictedDueTo<reason>`) and deletes the Pod; the sync hook then builds a fresh Pod,
 * queued again.
 *
 * Choices where the spec is silent:
 * - `Admitted` is given for a type with a queue only: False `NoPod` while no Pod runs, False
 *   `Queued` while the gate holds the Pod, True `Admitted` once it is lifted.
 * - `Evicted` appears with the first eviction and stays True (reason Kueue's, when it is a
 *   condition reason) until a later Pod is admitted; it then turns False, reason `Readmitted`.
 *   The hook keeps no memory but the Instance's previous conditions, so that is where it carries
 *   the eviction; only its reason is carried (a word, checked), the message is written afresh.
 * - The LocalQueue named in messages is the Pod's own `kueue.x-k8s.io/queue-name` label when it
 *   is a label value (Kueue may set it: its default LocalQueue), else the InstanceType's.
 */
import type { ConditionInput } from '../k8s/conditions.ts'
import { isLabelValue } from '../k8s/names.ts'
import { asList, asRecord, asText, isRecord, labelOf, type KubeObject } from '../k8s/objects.ts'
import { KUEUE_ADMISSION_GATE, KUEUE_POD_FINALIZER, KUEUE_QUEUE_LABEL, KUEUE_TERMINATION_TARGET, type PodQueue } from './labels.ts'

/** True while Kueue's admission gate holds the Pod. */
export function queuedByKueue(pod: KubeObject): boolean {
  return asList(asRecord(pod.spec).schedulingGates).some((gate) => isRecord(gate) && gate.name === KUEUE_ADMISSION_GATE)
}

/** True when the Pod carries Kueue's finalizer (its deletion waits on Kueue). */
export function heldByKueue(pod: KubeObject): boolean {
  return asList(pod.metadata.finalizers).includes(KUEUE_POD_FINALIZER)
}

/** The LocalQueue a Pod waits in, for a message. */
export function podQueueName(pod: KubeObject | undefined, queue: PodQueue | undefined): string | undefined {
  const label = labelOf(pod, KUEUE_QUEUE_LABEL)
  if (label !== undefined && label !== '' && isLabelValue(label)) return label
  return queue?.localQueueName
}

/** A condition reason: one word of letters, digits and `_,:` (the API's pattern), at most 128 characters. */
const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/
function reasonOr(value: unknown, fallback: string): string {
  return typeof value === 'string' && value.length <= 128 && REASON.test(value) ? value : fallback
}

/** Kueue's eviction of the Pod, when the Pod carries `TerminationTarget=True`. */
export function kueueEviction(pod: KubeObject | undefined): { reason: string } | undefined {
  const condition = asList(asRecord(pod?.status).conditions)
    .map(asRecord)
    .find((c) => c.type === KUEUE_TERMINATION_TARGET && c.status === 'True')
  return condition === undefined ? undefined : { reason: reasonOr(condition.reason, 'Evicted') }
}

/** Condition Admitted, for a type with a queue. */
export function admittedCondition(pod: KubeObject | undefined, queue: PodQueue): ConditionInput {
  const name = podQueueName(pod, queue)
  if (pod === undefined) {
    return {
      type: 'Admitted',
      status: 'False',
      reason: 'NoPod',
      message: `No Pod runs; the next one waits for quota in LocalQueue ${name}.`
    }
  }
  if (queuedByKueue(pod)) {
    return {
      type: 'Admitted',
      status: 'False',
      reason: 'Queued',
      message: `Pod ${pod.metadata.name} is waiting for quota in LocalQueue ${name}.`
    }
  }
  return {
    type: 'Admitted',
    status: 'True',
    reason: 'Admitted',
    message: `Kueue admitted Pod ${pod.metadata.name} from LocalQueue ${name}.`
  }
}

/**
 * Condition Evicted, or none (never evicted, or a type without a queue). `previous` is the
 * Instance's previous `status.conditions`.
 */
export function evictedCondition(pod: KubeObject | undefined, queue: PodQueue | undefined, previous: unknown): ConditionInput | undefined {
  if (queue === undefined) return undefined
  const name = podQueueName(pod, queue)
  const now = kueueEviction(pod)
  if (now !== undefined) {
    return {
      type: 'Evicted',
      status: 'True',
      reason: now.reason,
      message: `Kueue evicted Pod ${pod?.metadata.name} (${now.reason}); the next Pod waits for quota in LocalQueue ${name}, the node ports are kept.`
    }
  }
  const before = asList(previous)
    .map(asRecord)
    .find((c) => c.type === 'Evicted')
  if (before === undefined) return undefined
  const reason = reasonOr(before.reason, 'Evicted')
  const readmitted = pod !== undefined && !queuedByKueue(pod) && asText(pod.metadata.deletionTimestamp) === undefined
  if (before.status !== 'True' || readmitted) {
    return {
      type: 'Evicted',
      status: 'False',
      reason: 'Readmitted',
      message:
        pod !== undefined
          ? `Kueue admitted Pod ${pod.metadata.name} after the last eviction.`
          : 'Kueue admitted a Pod again after the last eviction.'
    }
  }
  return {
    type: 'Evicted',
    status: 'True',
    reason,
    message: `Kueue evicted the Instance's Pod (${reason}); the next Pod waits for quota in LocalQueue ${name}, the node ports are kept.`
  }
}
