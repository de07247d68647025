/**
 * The Instance admission check (`POST /admission/instance`, docs/instance.md "Admission").
 *
 * CREATE and UPDATE are checked with every rule that needs no other object (`specProblems`, and
 * the Instance name where it names the Pod and the Service). On UPDATE, while the stored Instance
 * runs a Pod (`oldObject.spec.stop` false or absent, `oldObject.status.podName` set), only
 * `spec.stop` and metadata may change: the Pod is never updated in place, so any other change
 * would silently wait for the next start. A change made together with `stop: true` is refused
 * too, because the stored object still runs. On every UPDATE, the CRD's transition rules of
 * `spec.workspace.persistent` are checked too (not removed, class fixed, size never shrinks). An
 * Instance that never got a Pod (a typo in `spec.type`, say) can be fixed in place.
 *
 * The annotation `gpustack.ai/keep-running-until`, when set or changed, must be an RFC 3339 time.
 *
 * Choices where the spec is silent:
 * - An UPDATE that leaves the spec (and name) as stored is not checked against the spec rules:
 *   metadata writes, such as Metacontroller removing its finalizer from a deleted Instance, must
 *   never be blocked by a rule the object was admitted without (webhook down, older release).
 * - Spec fields are compared top-level key by key, as JSON values (key order inside does not
 *   count, list order does), without serialising them.
 */
import type { AdmissionRequest, Verdict } from '../admission/review.ts'
import { isRecord, nameOf, ownValue } from '../k8s/objects.ts'
import { instanceNameProblems, specProblems } from './validate.ts'
import { persistentChangeProblems } from './spec-rules.ts'
import { KEEP_RUNNING_UNTIL_ANNOTATION, annotation, parseRfc3339 } from './lifecycle-policy.ts'

/** The verdict on one AdmissionReview request for an Instance. */
export function reviewInstance(request: AdmissionRequest): Verdict {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return { problems: [] }
  const object: unknown = request.object
  if (!isRecord(object)) return { problems: [`object: ${request.operation} carries no Instance object to check`] }
  const name = nameOf(object) ?? request.name
  const old: unknown = request.oldObject
  const postpone = postponeProblems(object, isRecord(old) ? old : undefined)
  if (request.operation === 'UPDATE' && isRecord(old)) {
    const lock = runningLockProblems(old, object)
    const unchanged = sameJson(old.spec, object.spec) && nameOf(old) === nameOf(object)
    if (unchanged) return { problems: [...lock, ...postpone] }
    const transitions = persistentChangeProblems(old.spec, object.spec).map((p) => p.message)
    return { problems: [...checks(object.spec, name), ...transitions, ...lock, ...postpone] }
  }
  return { problems: [...checks(object.spec, name), ...postpone] }
}

/**
 * The postponement annotation (docs/lifecycle.md), when it is set or changed: an RFC 3339 time
 * with a zone. The hook ignores any other value; refusing it tells the tenant at once.
 */
function postponeProblems(object: Record<string, unknown>, old: Record<string, unknown> | undefined): string[] {
  const annotations = (o: Record<string, unknown> | undefined) => (isRecord(o?.metadata) ? o.metadata.annotations : undefined)
  const value = annotation(annotations(object), KEEP_RUNNING_UNTIL_ANNOTATION)
  if (value === undefined || value === annotation(annotations(old), KEEP_RUNNING_UNTIL_ANNOTATION)) return []
  if (parseRfc3339(value) !== undefined) return []
  return [
    `metadata.annotations[${KEEP_RUNNING_UNTIL_ANNOTATION}] must be an RFC 3339 time such as 2026-12-02T20:00:00Z (it postpones an idle stop until then)`
  ]
}

function checks(spec: unknown, name: string | undefined): string[] {
  const problems = specProblems(spec)
  if (name !== undefined && name !== '') problems.push(...instanceNameProblems(name))
  return problems.map((p) => p.message)
}

/** While the stored Instance runs a Pod, every spec field but `stop` is fixed. */
function runningLockProblems(old: Record<string, unknown>, next: Record<string, unknown>): string[] {
  const oldSpec = isRecord(old.spec) ? old.spec : {}
  const status = isRecord(old.status) ? old.status : {}
  const running = oldSpec.stop !== true && typeof status.podName === 'string' && status.podName !== ''
  if (!running) return []
  const nextSpec = isRecord(next.spec) ? next.spec : {}
  const fields = [...new Set([...Object.keys(oldSpec), ...Object.keys(nextSpec)])].filter((f) => f !== 'stop').sort()
  return fields
    .filter((f) => !sameJson(ownValue(oldSpec, f), ownValue(nextSpec, f)))
    .map((f) => `spec.${f} cannot change while the Instance is running; set spec.stop: true first`)
}

/**
 * Whether two JSON values are equal as their canonical JSON would be: object key order does not
 * count, list order does, and a member that is undefined counts as absent.
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]))
  }
  if (!isRecord(a) || !isRecord(b)) return false
  const ka = definedKeys(a)
  return ka.length === definedKeys(b).length && ka.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]))
}

function definedKeys(o: Record<string, unknown>): string[] {
  return Object.keys(o).filter((k) => o[k] !== undefined)
}
