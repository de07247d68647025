/**
 * Reading observed objects out of a v2 hook request, and answering an observed child unchanged.
 */
import { type KubeObject, isRecord } from '../k8s/objects.ts'
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

/** The observed objects of one type, sorted by key so that iteration order is fixed. */
export function observedOfType(objects: TypedObjects | null | undefined, key: string): KubeObject[] {
  const map = objects?.[key]
  if (map === null || map === undefined) return []
  return Object.keys(map)
    .sort()
    .map((k) => map[k] as KubeObject)
}

/** One observed object by type key and object key. */
export function observedObject(
  objects: TypedObjects | null | undefined,
  type: string,
  key: string
): KubeObject | undefined {
  return objects?.[type]?.[key]
}

const SYSTEM_METADATA = [
  'managedFields',
  'ownerReferences',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'selfLink'
] as const

/**
 * The desired form of an observed child that must stay exactly as it is (metacontroller.md rule 5).
 *
 * Answering the observed object itself would record ownerReferences, managedFields and server
 * defaults as "last applied", and the next answer without them would strip them (orphaning the
 * child). The object recorded in the last-applied annotation makes the 3-way merge a no-op; a child
 * without a readable record is answered as observed minus status and system metadata.
 */
export function keepAsIs(observed: KubeObject): KubeObject {
  const recorded = observed.metadata.annotations?.[LAST_APPLIED_ANNOTATION]
  if (recorded !== undefined) {
    try {
      const parsed: unknown = JSON.parse(recorded)
      if (isRecord(parsed) && isRecord(parsed.metadata)) return parsed as KubeObject
    } catch {
      // An unreadable record is treated as no record at all.
    }
  }
  const { status: _status, ...rest } = observed
  const metadata: Record<string, unknown> = { ...observed.metadata }
  for (const field of SYSTEM_METADATA) delete metadata[field]
  if (observed.metadata.annotations !== undefined) {
    const annotations = { ...observed.metadata.annotations }
    delete annotations[LAST_APPLIED_ANNOTATION]
    delete annotations[DECORATOR_ANNOTATION]
    if (Object.keys(annotations).length === 0) delete metadata.annotations
    else metadata.annotations = annotations
  }
  return structuredClone({ ...rest, metadata })
}
