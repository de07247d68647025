/**
 * One pass of Metacontroller's child management for the unit layer: a hook's answer applied to
 * what the hook was shown, with the API-server stand-in (server-defaults.ts) storing each write.
 * Convergence properties run it twice and expect the second pass to write nothing.
 *
 * Read from Metacontroller v4.17.2: `ManageChildren` in `pkg/controller/common/manage_children.go`
 * with the default dynamic apply (merge.ts).
 */
import { applyUpdate, clone, type JsonObject } from './merge.ts'
import { createBody, DECORATOR_ANNOTATION, isDeleting, objectKey, typeKey, withParentNamespace } from './children.ts'
import type { FakeServer } from './fake-server.ts'
import { list, obj } from './fields.ts'
import { defaultOnCreate, defaultOnUpdate } from './server-defaults.ts'

/** A child update method of a CompositeController or DecoratorController. */
export type UpdateMethod = 'OnDelete' | 'Recreate' | 'InPlace' | 'RollingRecreate' | 'RollingInPlace'
/** Objects keyed by type key, then object key: the v2 `children` / `attachments` shape. */
export type ObjectsByType = Record<string, Record<string, JsonObject>>

/** One pass of Metacontroller's child management, as {@link simulateMetacontroller} takes it. */
export interface SimulateInput {
  /** The parent (composite) or decorated object: its uid, namespace, apiVersion, kind and name. */
  parent: JsonObject
  /** The owned children the hook was shown. */
  observed: ObjectsByType
  /** The hook's `children` (or `attachments`). */
  desired: readonly JsonObject[]
  /** Update method per type key (`Service.v1`); a type not listed is `OnDelete`, as in Metacontroller. */
  methods: Readonly<Record<string, UpdateMethod>>
  server: FakeServer
  /** Composite with `generateSelector: true` (the default here): adds the `controller-uid` label. */
  generateSelector?: boolean
  /** Set for a DecoratorController: its name goes into the decorator annotation instead. */
  decorator?: string
  /** Same-named objects in the cluster that Metacontroller does not own: creating one is refused. */
  foreign?: ObjectsByType
}

/** The result of one simulated pass. */
export interface SimulateResult {
  /** The owned children the next hook request would show. */
  observed: ObjectsByType
  /** Requests that changed something (create, update, delete): a converged pass has none. */
  writes: number
  /** What happened, in order, e.g. `update Service.v1 ns/web`, `create refused (AlreadyExists) ...`. */
  operations: string[]
}

/** Annotation by which a DecoratorController recognises its attachments. */

/**
 * Metacontroller's apply of one hook answer (`ManageChildren` with the default dynamic apply),
 * with {@link defaultOnCreate}/{@link defaultOnUpdate} standing in for the API server. Throws,
 * after doing what it could, when Metacontroller would report the sync as failed.
 */
export function simulateMetacontroller(input: SimulateInput): SimulateResult {
  const desired = new Map<string, Map<string, JsonObject>>()
  for (const child of input.desired) {
    const c = prepareDesired(child, input)
    const byKey = desired.get(typeKey(c)) ?? new Map<string, JsonObject>()
    byKey.set(objectKey(c), c)
    desired.set(typeKey(c), byKey)
  }
  const next: ObjectsByType = {}
  for (const type of new Set([...Object.keys(input.methods), ...Object.keys(input.observed)])) next[type] = clone(input.observed[type] ?? {})
  for (const group of [input.observed, input.foreign ?? {}]) {
    for (const [type, objects] of Object.entries(group)) {
      if (type !== 'Service.v1') continue
      for (const [key, svc] of Object.entries(objects)) {
        for (const p of list(obj(clone(svc), 'spec'), 'ports')) if (typeof p.nodePort === 'number') input.server.reserveNodePort(p.nodePort, key)
      }
    }
  }
  const operations: string[] = []
  const errors: string[] = []
  let writes = 0
  const remove = (type: string, key: string, what: string): void => {
    delete (next[type] as Record<string, JsonObject>)[key]
    if (type === 'Service.v1') input.server.releaseNodePorts(key)
    operations.push(`${what} ${type} ${key}`)
    writes += 1
  }
  for (const type of Object.keys(input.observed).sort()) {
    for (const [key, o] of Object.entries(input.observed[type] ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
      if (!isDeleting(o) && desired.get(type)?.get(key) === undefined) remove(type, key, 'delete')
    }
  }
  for (const type of [...desired.keys()].sort()) {
    next[type] ??= {}
    for (const [key, want] of [...(desired.get(type) ?? new Map<string, JsonObject>())].sort(([a], [b]) => a.localeCompare(b))) {
      const have = input.observed[type]?.[key]
      try {
        if (have === undefined) {
          if (input.foreign?.[type]?.[key] !== undefined) {
            operations.push(`create refused (AlreadyExists) ${type} ${key}`)
            continue
          }
          ;(next[type] as Record<string, JsonObject>)[key] = defaultOnCreate(createBody(want, input.parent), input.server)
          operations.push(`create ${type} ${key}`)
          writes += 1
          continue
        }
        const { object, changed } = applyUpdate(have, want)
        if (!changed || isDeleting(have)) continue
        const method = input.methods[type] ?? 'OnDelete'
        if (method === 'OnDelete') operations.push(`unchanged (OnDelete) ${type} ${key}`)
        else if (method === 'Recreate' || method === 'RollingRecreate') remove(type, key, 'delete (Recreate)')
        else {
          ;(next[type] as Record<string, JsonObject>)[key] = defaultOnUpdate(have, object, input.server)
          operations.push(`update ${type} ${key}`)
          writes += 1
        }
      } catch (err) {
        errors.push(`${type} ${key}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
  }
  const result = { observed: next, writes, operations }
  if (errors.length > 0) throw Object.assign(new Error(`sync failed:\n${errors.join('\n')}`), { result })
  return result
}

// What Metacontroller adds to an answered child before applying it, so it is in the record too:
// the parent's namespace when none is set, then the selector label or the decorator annotation.
function prepareDesired(child: JsonObject, input: SimulateInput): JsonObject {
  const c = withParentNamespace(child, input.parent)
  const meta = obj(c, 'metadata')
  const parentMeta = input.parent.metadata as JsonObject
  if (input.decorator !== undefined) {
    obj(meta, 'annotations')[DECORATOR_ANNOTATION] = input.decorator
  } else if (input.generateSelector !== false) {
    const labels = obj(meta, 'labels')
    labels['controller-uid'] ??= String(parentMeta.uid)
    if (labels['controller-uid'] !== parentMeta.uid) throw new Error(`labels on desired child ${typeKey(c)} ${objectKey(c)} don't match parent selector`)
  }
  return c
}
