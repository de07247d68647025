/**
 * Reading observed objects out of a v2 hook request, and answering an observed child unchanged.
 */
import { SYSTEM_METADATA_FIELDS, type KubeObject, annotationOf, isRecord, ownValue } from '../k8s/objects.ts'
import { parseJsonBounded } from '../k8s/json.ts'
import type { TypedObjects } from './schemas.ts'

/** Annotation in which Metacontroller's dynamic apply records what it last applied. */
export const LAST_APPLIED_ANNOTATION = 'metacontroller.k8s.io/last-applied-configuration'
/** Annotation Metacontroller puts on a DecoratorController's attachments. */
export const DECORATOR_ANNOTATION = 'metacontroller.k8s.io/decorator-controller'

/**
 * The type key of a v2 request map: `Kind.version` for the core group, `Kind.group/version`
 * otherwise (`Pod.v1`, `NetworkPolicy.networking.k8s.io/v1`).
 */
export function typeKey(apiVersion: string, kind: string): string {
  return `${kind}.${apiVersion}`
}

/** The object key of a v2 request map: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(name: string, namespace?: string): string {
  return namespace === undefined || namespace === '' ? name : `${namespace}/${name}`
}

/** True for a value a hook may read as a Kubernetes object: a record whose metadata is a record. */
export function isKubeObject(value: unknown): value is KubeObject {
  return isRecord(value) && isRecord(value.metadata)
}

/**
 * The observed objects of one type, sorted by key so that iteration order is fixed. Only own
 * members count (a type key is a request-chosen string), and an entry that is not an object with
 * metadata is skipped.
 */
export function observedOfType(objects: TypedObjects | null | undefined, key: string): KubeObject[] {
  const map = ownValue(objects, key)
  if (!isRecord(map)) return []
  return Object.keys(map)
    .sort()
    .map((k) => map[k])
    .filter(isKubeObject)
    .map((object) => typed(object, key))
}

/**
 * The object with the `apiVersion` and `kind` of the type key it was found under, where it lacks
 * them as strings (Metacontroller always sends both; an answer without them fails its apply).
 */
function typed(object: KubeObject, type: string): KubeObject {
  if (typeof object.apiVersion === 'string' && typeof object.kind === 'string') return object
  const dot = type.indexOf('.')
  if (dot <= 0 || dot === type.length - 1) return object
  return { ...object, apiVersion: type.slice(dot + 1), kind: type.slice(0, dot) }
}

/**
 * One observed object by type key and object key; own members only, so a name such as
 * `constructor` or `toString` finds an object only if one by that name was observed.
 */
export function observedObject(objects: TypedObjects | null | undefined, type: string, key: string): KubeObject | undefined {
  const found = ownValue(ownValue(objects, type), key)
  return isKubeObject(found) ? typed(found, type) : undefined
}

/**
 * The desired form of an observed child that must stay exactly as it is (docs/metacontroller.md rule 5).
 *
 * Answering the observed object itself would record ownerReferences, managedFields and server
 * defaults as "last applied", and the next answer without them would strip them (orphaning the
 * child). The object recorded in the last-applied annotation makes the 3-way merge a no-op; a child
 * without a readable record is answered as observed minus status and system metadata.
 */
export function keepAsIs(observed: KubeObject): KubeObject {
  const recorded = annotationOf(observed, LAST_APPLIED_ANNOTATION)
  if (recorded !== undefined) {
    // An unreadable record (not JSON, or nested past the bound every input has) is treated as
    // no record at all.
    const parsed = parseJsonBounded(recorded)
    if (isKubeObject(parsed)) {
      // A record without its type (edited by hand) is answered with the observed object's.
      if (typeof parsed.apiVersion !== 'string' && typeof observed.apiVersion === 'string') parsed.apiVersion = observed.apiVersion
      if (typeof parsed.kind !== 'string' && typeof observed.kind === 'string') parsed.kind = observed.kind
      return parsed
    }
  }
  const { status: _status, ...rest } = observed
  const metadata: Record<string, unknown> = { ...observed.metadata }
  for (const field of SYSTEM_METADATA_FIELDS) delete metadata[field]
  if (isRecord(observed.metadata.annotations)) {
    const annotations = { ...observed.metadata.annotations }
    delete annotations[LAST_APPLIED_ANNOTATION]
    delete annotations[DECORATOR_ANNOTATION]
    if (Object.keys(annotations).length === 0) delete metadata.annotations
    else metadata.annotations = annotations
  }
  return structuredClone({ ...rest, metadata })
}
