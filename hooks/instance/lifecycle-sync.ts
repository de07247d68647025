/**
 * The lifecycle's part of an Instance sync (docs/lifecycle.md): the InstanceActivity child,
 * `status.lifecycle`, the condition StopScheduled and the next resync, from the view and `now`.
 *
 * - Without `spec.lifecycle` on the type there is no InstanceActivity and no condition; only a
 *   stopped Instance whose annotation `gpustack.ai/stopped-by` parses still says who stopped it.
 * - The InstanceActivity exists while the Pod the sync keeps runs (lifecycle-observation.ts
 *   `runningPod`): not while it is replaced, stopped or not yet started, so each Pod starts with a
 *   fresh one.
 * - `status.lifecycle.stoppedBy` is reported while `spec.stop` is true only: once the tenant sets
 *   it false again, the annotation has no effect (the agent writes it anew at the next stop).
 */
import type { InstanceStatus } from '../api/instance.ts'
import type { ConditionInput } from '../k8s/conditions.ts'
import type { KubeObject } from '../k8s/objects.ts'
import { apiTime } from '../k8s/time.ts'
import { decideLifecycle } from './lifecycle.ts'
import { notRunningCondition } from './lifecycle-messages.ts'
import { runningPod } from './lifecycle-observation.ts'
import { STOPPED_BY_ANNOTATION } from '../api/instanceactivity.ts'
import { annotation, parseStoppedBy, resolveLifecycle } from './lifecycle-policy.ts'
import type { InstanceView } from './request.ts'

/** What the lifecycle adds to a sync answer. */
export interface LifecyclePart {
  status?: NonNullable<InstanceStatus['lifecycle']>
  condition?: ConditionInput
  child?: KubeObject
  resyncAfterSeconds?: number
}

/** `status.lifecycle.stoppedBy`, when `spec.stop` is true and the agent's annotation parses. */
export function stoppedByStatus(view: InstanceView): NonNullable<InstanceStatus['lifecycle']> | undefined {
  if (view.spec.stop !== true) return undefined
  const parsed = parseStoppedBy(annotation(view.annotations, STOPPED_BY_ANNOTATION))
  return parsed === undefined ? undefined : { stoppedBy: { reason: parsed.reason, at: apiTime(new Date(parsed.at)) } }
}

/**
 * The lifecycle part of a sync whose spec is valid. `keptPod` is the observed Pod when the sync
 * keeps it (undefined while it is replaced, when none exists or when the Instance stops).
 */
export function lifecyclePart(view: InstanceView, typeName: string, keptPod: KubeObject | undefined, now: Date): LifecyclePart {
  const stopped = stoppedByStatus(view)
  const spec = view.type?.lifecycle
  if (spec === undefined) return stopped === undefined ? {} : { status: stopped }
  const pod = view.spec.stop === true ? undefined : runningPod(keptPod)
  if (pod === undefined) {
    const by = stopped?.stoppedBy
    const parsed = by === undefined ? undefined : { reason: by.reason, at: Date.parse(by.at) }
    return {
      ...(stopped !== undefined ? { status: stopped } : {}),
      condition: notRunningCondition(view.name, view.namespace, typeName, parsed)
    }
  }
  const decision = decideLifecycle({
    lifecycle: resolveLifecycle(spec),
    typeName,
    instanceName: view.name,
    namespace: view.namespace,
    instanceUID: view.uid,
    pod,
    activity: view.activity,
    annotations: view.annotations,
    now
  })
  return {
    ...(Object.keys(decision.status).length > 0 ? { status: decision.status } : {}),
    condition: decision.condition,
    ...(decision.activity !== undefined ? { child: decision.activity } : {}),
    ...(decision.resyncAfterSeconds !== undefined ? { resyncAfterSeconds: decision.resyncAfterSeconds } : {})
  }
}
