/**
 * The problems that keep an Instance from running, as its request shows them (docs/instance.md):
 * the spec, the name, the InstanceType, the SSH key Secret, Pod Security and the Service name, in
 * the order sync.ts's module doc gives. Sync reports them and acts on them; finalize reports them
 * and never waits for them.
 */
import type { InstanceSpec } from '../api/instance.ts'
import type { InstanceTypeSpec } from '../api/instancetype.ts'
import { isRecord, ownValue, type KubeObject } from '../k8s/objects.ts'
import { describeSelector, labelSelectorProblems, selectorMatches } from '../k8s/label-selector.ts'
import { INSTANCE_TYPE_INVALID, SETTING_INVALID, TYPE_NOT_PERMITTED, type SpecProblem } from './problems.ts'
import type { InstanceView } from './request.ts'
import { AUTHORIZED_KEYS, podSecurityForbidsPod, podSecurityForbidsSSH } from './ssh.ts'
import { instanceNameProblems, specProblems, typeProblems, withDefaults, type ResolvedSpec } from './validate.ts'

/**
 * The SSH key Secret missing, or without a non-empty `authorized_keys`: no Pod is built that would
 * hang in ContainerCreating (docs/instance.md, "The SSH sidecar").
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

/**
 * The InstanceType's `spec.access` does not admit the Instance's namespace (docs/access.md,
 * "Entitlement"). The admission policy refuses such an Instance at write time; this catches a type
 * or a namespace changed afterwards. A namespace the request does not show, or a selector stored
 * without the CRD's rules, admits nothing: an access rule errs toward refusing.
 */
export function accessProblem(
  typeName: string,
  type: InstanceTypeSpec | undefined,
  namespace: string,
  namespaceObject: KubeObject | undefined
): SpecProblem | undefined {
  const selector = type?.access?.namespaceSelector
  if (selector === undefined) return undefined
  const field = 'spec.type'
  const head = `${field} ${typeName}: InstanceType ${typeName} is not available in namespace ${namespace}`
  const broken = labelSelectorProblems(selector, `InstanceType ${typeName} spec.access.namespaceSelector`)
  if (broken.length > 0) {
    return { field, reason: TYPE_NOT_PERMITTED, message: `${head} (${broken.slice(0, 3).join('; ')}; an admin must fix the InstanceType)` }
  }
  if (namespaceObject === undefined) {
    return { field, reason: TYPE_NOT_PERMITTED, message: `${head} (the namespace's labels are not observed yet)` }
  }
  if (selectorMatches(selector, namespaceObject.metadata.labels)) return undefined
  return {
    field,
    reason: TYPE_NOT_PERMITTED,
    message: `${head} (its spec.access.namespaceSelector, ${describeSelector(selector)}, does not match the namespace's labels); ask an admin for access or choose another type`
  }
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
      const access = accessProblem(spec.type, view.type, view.namespace, view.namespaceObject)
      if (access !== undefined) problems.push(access)
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
