/**
 * Reading observed objects out of a v2 hook request.
 *
 * Every observed object a hook reads comes through {@link observedOfType} or
 * {@link observedObject}, which give it the type of the key it arrived under and skip an entry
 * whose metadata does not give the object key it is filed under: Metacontroller files each object
 * by its own type and metadata, so an entry that disagrees is not one it sent, and an answer built
 * from it could name another object than the one observed.
 */
import { type KubeObject, isRecord, ownValue } from '../k8s/objects.ts'
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
 * members count (a type key is a request-chosen string); an entry that is not an object with
 * metadata, or whose metadata gives another object key, is skipped.
 */
export function observedOfType(objects: TypedObjects | null | undefined, type: string): KubeObject[] {
  const map = ownValue(objects, type)
  if (!isRecord(map)) return []
  return Object.keys(map)
    .sort()
    .flatMap((key) => {
      const found = filed(map[key], type, key)
      return found === undefined ? [] : [found]
    })
}

/**
 * One observed object by type key and object key; own members only, so a name such as
 * `constructor` or `toString` finds an object only if one by that name was observed.
 */
export function observedObject(objects: TypedObjects | null | undefined, type: string, key: string): KubeObject | undefined {
  return filed(ownValue(ownValue(objects, type), key), type, key)
}

/**
 * The entry found under `type` and `key` as the object Metacontroller filed there: undefined
 * unless it is an object whose metadata gives `key`, and typed with the `apiVersion` and `kind`
 * of `type` whatever it says itself (the informer of that type is where Metacontroller found it).
 */
function filed(value: unknown, type: string, key: string): KubeObject | undefined {
  if (!isKubeObject(value)) return undefined
  const { name, namespace } = value.metadata
  if (typeof name !== 'string' || objectKey(name, typeof namespace === 'string' ? namespace : undefined) !== key) return undefined
  const parsed = parseTypeKey(type)
  if (parsed === undefined || (value.apiVersion === parsed.apiVersion && value.kind === parsed.kind)) return value
  return { ...value, ...parsed }
}

/** The apiVersion and kind a type key names, or undefined when it is not `Kind.version`. */
export function parseTypeKey(type: string): { apiVersion: string; kind: string } | undefined {
  const dot = type.indexOf('.')
  if (dot <= 0 || dot === type.length - 1) return undefined
  return { apiVersion: type.slice(dot + 1), kind: type.slice(0, dot) }
}
