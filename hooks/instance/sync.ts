/**
 * Sync hook of the Instance CompositeController (instance.md): one Pod (never updated in place)
 * and one NodePort Service whose node ports survive stop and start.
 *
 * The answer always carries `children` and a full status (metacontroller.md rule 1). A spec error
 * deletes nothing of the Instance's: its Pod and Service are answered as they are (rule 5) and the
 * status says why.
 *
 * Choices where the spec is silent:
 * - Spec problems are collected in a fixed order: the spec itself, the Instance name (it names the
 *   Pod and the Service), then (only for a well-formed spec) the InstanceType, the SSH key Secret
 *   and Pod Security, and last the Service name.
 * - A spec error keeps every child (instance.md: "a spec error never deletes what exists"), with
 *   one exception: `spec.stop: true` still stops. Stopping is the user's own request to remove the
 *   Pod, and an error elsewhere (an InstanceType an admin deleted, say) must not keep a GPU busy
 *   against it. The Service and its node ports are kept as they are.
 * - Observed Pods or Services other than the ones named after the Instance are left out (deleted),
 *   with a spec error too: they carry the Instance's `controller-uid` label (Metacontroller
 *   adopted them), which anyone who may label an object in the namespace can put on any Pod or
 *   Service there; the controller makes no others, and answering one would answer a name someone
 *   else chose (answer-rule.ts).
 * - A Pod without a readable generation annotation counts as built from another generation.
 */
import type { InstanceSpec } from '../api/instance.ts'
import type { InstanceTypeSpec } from '../api/instancetype.ts'
import { SSH_SERVER_IMAGE_SETTING } from '../api/setting.ts'
import { isRecord, annotationOf, isTerminatingNamespace, ownValue, type KubeObject } from '../k8s/objects.ts'
import { keepAsIs } from '../metacontroller/keep.ts'
import type { CompositeResponse } from '../metacontroller/schemas.ts'
import { GENERATION_ANNOTATION, POD_HASH_ANNOTATION, SSHD_CONTAINER } from './labels.ts'
import { buildPod } from './pod.ts'
import { buildService } from './service.ts'
import { AUTHORIZED_KEYS, podSecurityForbidsPod, podSecurityForbidsSSH } from './ssh.ts'
import { instanceStatus, podDeleting, podEnded, type Drift } from './status.ts'
import {
  INSTANCE_TYPE_INVALID,
  SETTING_INVALID,
  instanceNameProblems,
  specProblems,
  typeProblems,
  withDefaults,
  type ResolvedSpec,
  type SpecProblem
} from './validate.ts'
import {
  InstanceParentSchema,
  InstanceSyncRequestSchema,
  NAMESPACE_KEY,
  POD_KEY,
  RUNTIME_CLASS_KEY,
  SECRET_KEY,
  SERVICE_KEY,
  readView,
  type InstanceSyncRequest,
  type InstanceView
} from './request.ts'

/** Re-exported for the modules that import them from here; their home is `request.ts`. */
export { InstanceParentSchema, InstanceSyncRequestSchema, NAMESPACE_KEY, POD_KEY, RUNTIME_CLASS_KEY, SECRET_KEY, SERVICE_KEY, readView }
export type { InstanceSyncRequest, InstanceView }

/**
 * The SSH key Secret missing, or without a non-empty `authorized_keys`: no Pod is built that would
 * hang in ContainerCreating (instance.md, "The SSH sidecar").
 */
export function sshKeyProblem(secretName: string, namespace: string, secret: KubeObject | undefined): SpecProblem | undefined {
  const field = 'spec.sshPublicKey.name'
  const ref = `Secret ${namespace}/${secretName}`
  if (secret === undefined) {
    return {
      field,
      reason: 'SSHKeyMissing',
      message: `${field} ${secretName}: ${ref} does not exist; create it with the key ${AUTHORIZED_KEYS}`
    }
  }
  const data = isRecord(secret.data) ? secret.data : {}
  const value = ownValue(data, AUTHORIZED_KEYS)
  if (typeof value === 'string' && value !== '') return undefined
  const keys = Object.keys(data).sort()
  const has = keys.length > 0 ? `it has ${keys.join(', ')}` : 'it has no keys'
  const what = value === undefined ? `has no key ${AUTHORIZED_KEYS} (${has})` : `has an empty ${AUTHORIZED_KEYS}`
  return { field, reason: 'SSHKeyMissing', message: `${field} ${secretName}: ${ref} ${what}; add the public keys under ${AUTHORIZED_KEYS}` }
}

/** Every spec problem, in the order described in the module doc, and the resolved spec when well-formed. */
export function instanceProblems(view: InstanceView): { problems: SpecProblem[]; resolved: ResolvedSpec | undefined } {
  const problems = specProblems(view.spec)
  const wellFormed = problems.length === 0
  problems.push(...instanceNameProblems(view.name))
  let resolved: ResolvedSpec | undefined
  if (wellFormed) {
    const spec = view.spec as unknown as InstanceSpec
    resolved = withDefaults(spec)
    if (view.instanceType.state === 'invalid') {
      problems.push({
        field: 'spec.type',
        reason: INSTANCE_TYPE_INVALID,
        message:
          `spec.type ${spec.type}: InstanceType ${spec.type} is stored in a shape the hooks cannot use ` +
          `(${view.instanceType.errors.join('; ')}); an admin must fix the InstanceType`
      })
    } else {
      problems.push(...typeProblems(spec, spec.type, view.type))
    }
    const runtimeClass = view.type?.runtimeClassName
    if (runtimeClass !== undefined && runtimeClass !== '' && !view.runtimeClasses.has(runtimeClass)) {
      problems.push({
        field: 'spec.type',
        reason: 'RuntimeClassNotFound',
        message: `spec.type ${spec.type}: the InstanceType's runtimeClassName ${runtimeClass} names no RuntimeClass; create it or fix the InstanceType`
      })
    }
    const restricted = podSecurityForbidsPod(view.namespaceObject)
    if (restricted !== undefined) problems.push(restricted)
    if (resolved.sshPublicKey !== undefined) {
      if (view.sshImageProblem !== undefined) {
        problems.push({
          field: 'spec.sshPublicKey',
          reason: SETTING_INVALID,
          message: `spec.sshPublicKey: ${view.sshImageProblem}; an admin must fix the Setting`
        })
      }
      const key = sshKeyProblem(resolved.sshPublicKey.name, view.namespace, view.secret)
      if (key !== undefined) problems.push(key)
      const policy = podSecurityForbidsSSH(view.namespaceObject)
      if (policy !== undefined) problems.push(policy)
    }
  }
  if (view.serviceTaken) {
    problems.push({
      field: 'metadata.name',
      reason: 'ServiceNameTaken',
      message:
        `Service ${view.namespace}/${view.name} already exists and is not this Instance's; the Instance's Service takes ` +
        'its name, so delete or rename that Service, or give the Instance another name'
    })
  }
  return { problems, resolved }
}

/** Children as the response schema types them (every object we answer has a name). */
export function asChildren(objects: readonly KubeObject[]): CompositeResponse['children'] {
  return objects as CompositeResponse['children']
}

/**
 * The observed children named after the Instance, of `types`, answered unchanged (metacontroller.md
 * rule 5); other observed children are left out.
 */
export function keepEveryChild(view: InstanceView, types: readonly string[] = [POD_KEY, SERVICE_KEY]): KubeObject[] {
  const own = new Map([
    [POD_KEY, view.pod],
    [SERVICE_KEY, view.service]
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

/** Keep, replace or build the Pod of a running Instance (instance.md, "The Pod"). */
export function decidePod(view: InstanceView, resolved: ResolvedSpec, type: InstanceTypeSpec): PodDecision {
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
  if (pod === undefined) return { child: fresh, drift: { kind: 'None' } }
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
    service: view.service
  }
  // `view.type` is undefined only with an InstanceTypeNotFound problem; the test narrows the type.
  if (resolved === undefined || problems.length > 0 || view.type === undefined) {
    const pod = view.pod
    const podGeneration = annotationOf(pod, GENERATION_ANNOTATION)
    const drift: Drift =
      pod !== undefined && podGeneration !== String(view.generation)
        ? { kind: 'SpecChanged', podName: pod.metadata.name ?? view.name, podGeneration, generation: view.generation, held: true }
        : { kind: 'None', podName: pod?.metadata.name }
    const kept = view.spec.stop === true ? keepEveryChild(view, [SERVICE_KEY]) : keepEveryChild(view)
    return { children: asChildren(kept), status: instanceStatus({ ...base, drift }) }
  }
  const service = buildService({
    name: view.name,
    namespace: view.namespace,
    spec: resolved,
    ssh: resolved.sshPublicKey !== undefined,
    observed: view.service
  })
  const children: KubeObject[] = []
  let decision: PodDecision = { child: undefined, drift: { kind: 'None' } }
  if (!resolved.stop) {
    decision = decidePod(view, resolved, view.type)
    if (decision.child !== undefined) children.push(decision.child)
  }
  if (service !== undefined) children.push(service)
  const status = instanceStatus({ ...base, replacing: decision.replacing, drift: decision.drift })
  return { children: asChildren(withoutCreatesIn(view, children)), status }
}

/**
 * In a namespace being deleted nothing new can be created (the API server refuses it and the
 * whole sync fails, once per retry, until finalize runs); the namespace controller deletes Pods and
 * Services before the Instances. So there only children already observed are answered: updates
 * and removals still apply, creations wait for a namespace that is not going away.
 */
function withoutCreatesIn(view: InstanceView, children: KubeObject[]): KubeObject[] {
  if (!isTerminatingNamespace(view.namespaceObject)) return children
  return children.filter((child) => (child.kind === 'Pod' ? view.pod !== undefined : view.service !== undefined))
}
