/**
 * A child object as Metacontroller handles it: how it is keyed in a v2 request map, whom it
 * belongs to, which namespace it lands in and what its first write carries. Shared by the unit
 * layer's simulated pass (simulate.ts) and the cluster layer's driver, so the two stand-ins
 * cannot drift apart on these rules.
 *
 * Read from Metacontroller v4.17.2: `pkg/controller/common/manage_children.go` and the composite
 * and decorator controllers (`applyNamespaceDefaults`, `MakeControllerRef`).
 */
import { clone, isObject, setLastApplied, type JsonObject } from './merge.ts'

/** Annotation by which a DecoratorController recognises its attachments. */
export const DECORATOR_ANNOTATION = 'metacontroller.k8s.io/decorator-controller'

/** `metadata`, or a detached `{}` when the object has none: reading never adds it. */
export const meta = (o: JsonObject): JsonObject => (isObject(o.metadata) ? o.metadata : {})

/** `metadata.labels` or `metadata.annotations`, `{}` when absent; values are not checked. */
export const strings = (o: JsonObject, f: string): Record<string, string> =>
  isObject(meta(o)[f]) ? (meta(o)[f] as Record<string, string>) : {}

/** True once the object carries a deletion timestamp. */
export const isDeleting = (o: JsonObject): boolean => typeof meta(o).deletionTimestamp === 'string'

/** `Kind.version` / `Kind.group/version`: the type key of a v2 request map. */
export function typeKey(obj: JsonObject): string {
  return `${String(obj.kind)}.${String(obj.apiVersion)}`
}

/** `namespace/name`, or `name` for a cluster-scoped object: the object key of a v2 request map. */
export function objectKey(o: JsonObject): string {
  return typeof meta(o).namespace === 'string' && meta(o).namespace !== ''
    ? `${String(meta(o).namespace)}/${String(meta(o).name)}`
    : String(meta(o).name)
}

/** The object entries of `metadata.ownerReferences`. */
export function ownerRefs(o: JsonObject): JsonObject[] {
  const refs = meta(o).ownerReferences
  return Array.isArray(refs) ? refs.filter(isObject) : []
}

/** The ownerReference marked `controller: true`, if any. */
export function controllerOf(o: JsonObject): JsonObject | undefined {
  return ownerRefs(o).find((r) => r.controller === true)
}

/** The controller ownerReference Metacontroller sets on what it creates (`MakeControllerRef`). */
export function controllerRef(parent: JsonObject): JsonObject {
  const meta = parent.metadata as JsonObject
  return {
    apiVersion: parent.apiVersion ?? null,
    kind: parent.kind ?? null,
    name: meta.name ?? null,
    uid: meta.uid ?? null,
    controller: true,
    blockOwnerDeletion: true
  }
}

/**
 * A copy of an answered child placed as `applyNamespaceDefaults` places it: without a namespace of
 * its own it gets the parent's, or none under a cluster-scoped parent.
 */
export function withParentNamespace(child: JsonObject, parent: JsonObject): JsonObject {
  const c = clone(child)
  if (!isObject(c.metadata)) c.metadata = {}
  const m = c.metadata
  if (typeof m.namespace !== 'string' || m.namespace === '') {
    if (typeof meta(parent).namespace === 'string' && meta(parent).namespace !== '') m.namespace = meta(parent).namespace as string
    else delete m.namespace
  }
  return c
}

/**
 * The body of a create: the desired child recorded as last applied, owned by the parent through a
 * controller reference unless it already names the parent's uid.
 */
export function createBody(desired: JsonObject, parent: JsonObject): JsonObject {
  const body = setLastApplied(desired, desired)
  const refs = ownerRefs(body)
  if (!refs.some((r) => r.uid === meta(parent).uid)) meta(body).ownerReferences = [...refs, controllerRef(parent)]
  return body
}

/** `objects` as a v2 request map: by type key, then by object key, every listed type present; each object cloned. */
export function requestMap<T>(
  objects: readonly T[],
  types: readonly string[],
  typeOf: (o: T) => string,
  keyOf: (o: T) => string
): Record<string, Record<string, T>> {
  const out: Record<string, Record<string, T>> = {}
  for (const t of types) out[t] = {}
  for (const o of objects) {
    const t = typeOf(o)
    out[t] ??= {}
    out[t][keyOf(o)] = structuredClone(o)
  }
  return out
}
