/**
 * Sync hook of the Instance CompositeController (docs/instance.md): one Pod (never updated in place)
 * and one NodePort Service whose node ports survive stop and start.
 *
 * The answer always carries `children` and a full status (docs/metacontroller.md rule 1). A spec error
 * deletes nothing of the Instance's: its Pod and Service are answered as they are (rule 5) and the
 * status says why.
 *
 * Choices where the spec is silent:
 * - Spec problems are collected in a fixed order: the spec itself, the Instance name (it names the
 *   Pod and the Service), then (only for a well-formed spec) the InstanceType, the SSH key Secret
 *   and Pod Security, and last the Service name.
 * - A spec error keeps every child (docs/instance.md: "a spec error never deletes what exists"), with
 *   one exception: `spec.stop: true` still stops. Stopping is the user's own request to remove the
 *   Pod, and an error elsewhere (an InstanceType an admin deleted, say) must not keep a GPU busy
 *   against it. The Service and its node ports are kept as they are.
 * - Observed Pods or Services other than the ones named after the Instance are left out (deleted),
 *   with a spec error too: they carry the Instance's `controller-uid` label (Metacontroller
 *   adopted them), which anyone who may label an object in the namespace can put on any Pod or
 *   Service there; the controller makes no others, and answering one would answer a name someone
 *   else chose (answer-rule.ts).
 * - A Pod without a readable generation annotation counts as built from another generation.
 * - Access revoked (the InstanceType's `spec.access` no longer admits the namespace) is a spec
 *   problem like the others: no new Pod. A running Pod is kept (an admin's change never disrupts
 *   a running workspace) and UpToDate says `AccessRevoked`; the next start is refused.
 * - A persistent workspace's claim is answered whether or not the Instance runs, and kept as
 *   observed on a spec error (workspace.ts decides it).
 * - A DRA Instance's ResourceClaimTemplate is answered whether or not the Instance runs (it
 *   holds no device; the claim made from it goes with the Pod). Its spec is immutable, so
 *   Metacontroller replaces it (update method Recreate); while an observed template differs from
 *   the one rendered now, no new Pod is created, so that no claim is made from the old one.
 */
import type { PersistentWorkspace } from '../api/instance.ts'
import type { InstanceTypeSpec } from '../api/instancetype.ts'
import { SSH_SERVER_IMAGE_SETTING } from '../api/setting.ts'
import { isRecord, annotationOf, isTerminatingNamespace, type KubeObject } from '../k8s/objects.ts'
import { keepAsIs } from '../metacontroller/keep.ts'
import { asChildren, type CompositeResponse } from '../metacontroller/schemas.ts'
import { CLAIM_TEMPLATE_HASH_ANNOTATION, GENERATION_ANNOTATION, POD_HASH_ANNOTATION, SSHD_CONTAINER } from './labels.ts'
import { buildClaimTemplate, usesDra } from './claim.ts'
import { buildPod } from './pod.ts'
import { buildService } from './service.ts'
import { instanceStatus, podDeleting, podEnded, podScheduled, type Drift } from './status.ts'
import { decideWorkspaceClaim, withWorkspace, workspaceReport, type WorkspaceInput } from './workspace.ts'
import type { ResolvedSpec } from './validate.ts'
import { instanceProblems } from './view-problems.ts'
import { TYPE_NOT_PERMITTED } from './problems.ts'
import { lifecyclePart, stoppedByStatus } from './lifecycle-sync.ts'
import {
  ACTIVITY_KEY,
  CLAIM_TEMPLATE_KEY,
  POD_KEY,
  SERVICE_KEY,
  WORKSPACE_CLAIM_KEY,
  readView,
  type InstanceSyncRequest,
  type InstanceView
} from './request.ts'

/**
 * The observed children named after the Instance, of `types`, answered unchanged (docs/metacontroller.md
 * rule 5); other observed children are left out.
 */
export function keepEveryChild(
  view: InstanceView,
  types: readonly string[] = [POD_KEY, SERVICE_KEY, CLAIM_TEMPLATE_KEY, WORKSPACE_CLAIM_KEY, ACTIVITY_KEY]
): KubeObject[] {
  const own = new Map([
    [POD_KEY, view.pod],
    [SERVICE_KEY, view.service],
    [CLAIM_TEMPLATE_KEY, view.claimTemplate],
    [WORKSPACE_CLAIM_KEY, view.workspaceClaim],
    [ACTIVITY_KEY, view.activity]
  ])
  return types.flatMap((type) => {
    const child = own.get(type)
    return child === undefined ? [] : [keepAsIs(child)]
  })
}

/** The image of the observed Pod's SSH sidecar, if it has one. */
function sshdImage(pod: KubeObject): string | undefined {
  const containers = isRecord(pod.spec) && Array.isArray(pod.spec.containers) ? (pod.spec.containers as unknown[]) : []
  const sshd = containers.find((c) => isRecord(c) && c.name === SSHD_CONTAINER)
  return isRecord(sshd) && typeof sshd.image === 'string' ? sshd.image : undefined
}

/** What to do with the Pod of a running Instance. */
export interface PodDecision {
  /** The Pod to answer: the observed one kept, or a fresh one; none while an old one goes away. */
  child: KubeObject | undefined
  /** Why the observed Pod is left out (Metacontroller deletes it), as a clause. */
  replacing?: string
  drift: Drift
}

/**
 * Keep, replace or build the Pod of a running Instance (docs/instance.md, "The Pod"). `template` is
 * the ResourceClaimTemplate rendered now, for a DRA Instance: a new Pod waits while an observed
 * template differs from it.
 */
export function decidePod(view: InstanceView, resolved: ResolvedSpec, type: InstanceTypeSpec, template?: KubeObject): PodDecision {
  const ssh = resolved.sshPublicKey !== undefined
  const fresh = buildPod({
    name: view.name,
    namespace: view.namespace,
    generation: view.generation,
    spec: resolved,
    typeName: resolved.type,
    type,
    sshImage: ssh ? view.sshImage : undefined
  })
  const pod = view.pod
  if (pod === undefined) {
    const stale =
      template !== undefined &&
      view.claimTemplate !== undefined &&
      annotationOf(view.claimTemplate, CLAIM_TEMPLATE_HASH_ANNOTATION) !== annotationOf(template, CLAIM_TEMPLATE_HASH_ANNOTATION)
    return { child: stale ? undefined : fresh, drift: { kind: 'None' } }
  }
  const podName = pod.metadata.name ?? view.name
  const podGeneration = annotationOf(pod, GENERATION_ANNOTATION)
  const outdated = podGeneration !== String(view.generation)
  const drift: Drift = outdated
    ? { kind: 'SpecChanged', podName, podGeneration, generation: view.generation, held: false }
    : { kind: 'None' }
  if (podEnded(pod)) {
    const status = isRecord(pod.status) ? pod.status : {}
    const reason = typeof status.reason === 'string' ? ` (${status.reason})` : ''
    return { child: undefined, replacing: `it ended with phase ${String(status.phase)}${reason}`, drift }
  }
  if (podDeleting(pod)) return { child: undefined, replacing: 'it is being deleted', drift }
  if (outdated) {
    return {
      child: undefined,
      replacing: `it was built from generation ${podGeneration ?? 'unknown'} and the spec is at generation ${view.generation}`,
      drift
    }
  }
  const kept = keepAsIs(pod)
  if (annotationOf(pod, POD_HASH_ANNOTATION) === annotationOf(fresh, POD_HASH_ANNOTATION)) {
    return { child: kept, drift: { kind: 'None', podName } }
  }
  // An admin's change never disrupts a running Pod: it is kept and applies at the next start.
  const was = sshdImage(pod)
  if (ssh && was !== view.sshImage) {
    return { child: kept, drift: { kind: 'SettingChanged', podName, setting: SSH_SERVER_IMAGE_SETTING, was, now: view.sshImage } }
  }
  return { child: kept, drift: { kind: 'InstanceTypeChanged', podName, typeName: resolved.type } }
}

/** The sync hook. */
export function sync(request: InstanceSyncRequest, now: Date): CompositeResponse {
  const view = readView(request)
  const { problems, resolved } = instanceProblems(view)
  const base = {
    spec: view.spec,
    generation: view.observedGeneration,
    previousConditions: view.previousConditions,
    now,
    finalizing: false,
    problems,
    pod: view.pod,
    service: view.service,
    queue: view.type?.queue,
    accessAddress: view.accessAddress
  }
  // `view.type` is undefined only with an InstanceTypeNotFound problem; the test narrows the type.
  if (resolved === undefined || problems.length > 0 || view.type === undefined) {
    const pod = view.pod
    const podGeneration = annotationOf(pod, GENERATION_ANNOTATION)
    const revoked = problems.some((p) => p.reason === TYPE_NOT_PERMITTED)
    const drift: Drift =
      pod !== undefined && podGeneration !== String(view.generation)
        ? { kind: 'SpecChanged', podName: pod.metadata.name ?? view.name, podGeneration, generation: view.generation, held: true }
        : pod !== undefined && revoked
          ? { kind: 'AccessRevoked', podName: pod.metadata.name ?? view.name, typeName: String(view.spec.type), namespace: view.namespace }
          : { kind: 'None', podName: pod?.metadata.name }
    const kept =
      view.spec.stop === true ? keepEveryChild(view, [SERVICE_KEY, CLAIM_TEMPLATE_KEY, WORKSPACE_CLAIM_KEY]) : keepEveryChild(view)
    const workspace = workspaceReport(workspaceInput(view, undefined), undefined, view.pod !== undefined && podScheduled(view.pod))
    return {
      children: asChildren(kept),
      status: withWorkspace(instanceStatus({ ...base, drift, lifecycle: stoppedByStatus(view) }), workspace)
    }
  }
  const service = buildService({
    name: view.name,
    namespace: view.namespace,
    spec: resolved,
    ssh: resolved.sshPublicKey !== undefined,
    observed: view.service
  })
  const accelerator = resolved.resources.accelerator
  const template =
    accelerator !== undefined && usesDra(view.type)
      ? buildClaimTemplate({ name: view.name, namespace: view.namespace, accelerator, type: view.type })
      : undefined
  const children: KubeObject[] = []
  let decision: PodDecision = { child: undefined, drift: { kind: 'None' } }
  if (!resolved.stop) {
    decision = decidePod(view, resolved, view.type, template)
    if (decision.child !== undefined) children.push(decision.child)
  }
  if (service !== undefined) children.push(service)
  if (template !== undefined) children.push(template)
  const claimInput = workspaceInput(view, resolved.workspace.persistent)
  const claim = decideWorkspaceClaim(claimInput)
  if (claim.child !== undefined) children.push(claim.child)
  const scheduled = view.pod !== undefined && podScheduled(view.pod)
  const kept = view.pod !== undefined && decision.child !== undefined ? view.pod : undefined
  const lifecycle = lifecyclePart(view, resolved.type, kept, now)
  if (lifecycle.child !== undefined) children.push(lifecycle.child)
  const status = withWorkspace(
    instanceStatus({
      ...base,
      replacing: decision.replacing,
      drift: decision.drift,
      lifecycle: lifecycle.status,
      stopScheduled: lifecycle.condition
    }),
    workspaceReport(claimInput, claim.held, scheduled)
  )
  const response: CompositeResponse = { children: asChildren(withoutCreatesIn(view, children)), status }
  if (lifecycle.resyncAfterSeconds !== undefined) response.resyncAfterSeconds = lifecycle.resyncAfterSeconds
  return response
}

/**
 * In a namespace being deleted nothing new can be created (the API server refuses it and the
 * whole sync fails, once per retry, until finalize runs); the namespace controller deletes Pods and
 * Services before the Instances. So there only children already observed are answered: updates
 * and removals still apply, creations wait for a namespace that is not going away.
 */
function withoutCreatesIn(view: InstanceView, children: KubeObject[]): KubeObject[] {
  if (!isTerminatingNamespace(view.namespaceObject)) return children
  const observed = new Map([
    ['Pod', view.pod],
    ['Service', view.service],
    ['ResourceClaimTemplate', view.claimTemplate],
    ['PersistentVolumeClaim', view.workspaceClaim],
    ['InstanceActivity', view.activity]
  ])
  return children.filter((child) => observed.get(String(child.kind)) !== undefined)
}

/** What the workspace claim is decided from: the view, and the valid spec's persistent workspace. */
function workspaceInput(view: InstanceView, persistent: PersistentWorkspace | undefined): WorkspaceInput {
  return { name: view.name, namespace: view.namespace, persistent, claim: view.workspaceClaim, storageClasses: view.storageClasses }
}
