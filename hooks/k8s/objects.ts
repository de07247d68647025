/**
 * Plain-data views of Kubernetes objects as they travel through the hooks.
 *
 * Objects inside hook payloads stay open: the hooks read the fields they need and pass the rest
 * back untouched, so nothing here narrows or strips an object.
 */
import type { ObjectMeta } from 'kubernetes-types/meta/v1.d.ts'

/** Any Kubernetes object: metadata plus whatever else the kind carries. */
export interface KubeObject {
  apiVersion?: string
  kind?: string
  metadata: ObjectMeta
  [field: string]: unknown
}

/** The label every object the product writes carries. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by'
/** The value of {@link MANAGED_BY_LABEL}. */
export const MANAGED_BY = 'gpuhooks'

/** True when `value` is a non-null, non-array object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Reads a string label, or undefined. */
export function labelOf(obj: KubeObject | undefined, key: string): string | undefined {
  return obj?.metadata.labels?.[key]
}

/** Reads a string annotation, or undefined. */
export function annotationOf(obj: KubeObject | undefined, key: string): string | undefined {
  return obj?.metadata.annotations?.[key]
}

/** A deep copy of JSON data, so builders never share structure with their inputs. */
export function cloneJson<T>(value: T): T {
  return structuredClone(value)
}

/**
 * True while a Namespace is being deleted: its deletion timestamp is set, or the API server
 * already reports phase `Terminating`. Nothing new can be created in it then.
 */
export function isTerminatingNamespace(namespace: KubeObject | undefined): boolean {
  if (namespace === undefined) return false
  const status = namespace.status
  return namespace.metadata.deletionTimestamp !== undefined || (isRecord(status) && status.phase === 'Terminating')
}
