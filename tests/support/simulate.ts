/**
 * One pass of Metacontroller's child management for the unit layer: a hook's answer applied to
 * what the hook was shown, with the API-server stand-in (server-defaults.ts) storing each write.
 * Convergence properties run it twice and expect the second pass to write nothing. The rules of
 * the pass are manage-children.ts, which the cluster layer's driver runs against a real API server.
 */
import { clone, type JsonObject } from './merge.ts'
import { DECORATOR_ANNOTATION, objectKey, typeKey, withParentNamespace } from './children.ts'
import { ServerError, type FakeServer } from './fake-server.ts'
import { list, obj } from './fields.ts'
import { defaultOnCreate, defaultOnUpdate } from './server-defaults.ts'
import { manageChildrenSync, type ChildEvent, type SyncChildApi } from './manage-children.ts'

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

/**
 * Metacontroller's apply of one hook answer: the shared child management (manage-children.ts)
 * against an in-memory API server whose writes go through {@link defaultOnCreate} and
 * {@link defaultOnUpdate}. Throws, after doing what it could, when Metacontroller would report
 * the sync as failed.
 */
export function simulateMetacontroller(input: SimulateInput): SimulateResult {
  const desired = input.desired.map((child) => prepareDesired(child, input))
  const next: ObjectsByType = {}
  for (const type of new Set([...Object.keys(input.methods), ...Object.keys(input.observed), ...desired.map(typeKey)]))
    next[type] = clone(input.observed[type] ?? {})
  for (const group of [input.observed, input.foreign ?? {}]) {
    for (const [type, objects] of Object.entries(group)) {
      if (type !== 'Service.v1') continue
      for (const [key, svc] of Object.entries(objects)) {
        for (const p of list(obj(clone(svc), 'spec'), 'ports'))
          if (typeof p.nodePort === 'number') input.server.reserveNodePort(p.nodePort, key)
      }
    }
  }
  const { events, errors } = manageChildrenSync(memoryApi(next, input), {
    parent: input.parent,
    observed: new Map(Object.entries(input.observed).map(([type, objects]) => [type, new Map(Object.entries(objects))])),
    desired,
    methodOf: (child) => input.methods[typeKey(child)] ?? 'OnDelete'
  })
  const result = { observed: next, writes: events.filter((e) => e.verb !== 'skip').length, operations: events.map(operation) }
  if (errors.length > 0) throw Object.assign(new Error(`sync failed:\n${errors.join('\n')}`), { result })
  return result
}

// The in-memory API server: `store` is what the next request shows; a same-named object
// Metacontroller does not own makes a create fail as the API server's would.
function memoryApi(store: ObjectsByType, input: SimulateInput): SyncChildApi {
  const slot = (o: JsonObject): Record<string, JsonObject> => (store[typeKey(o)] ??= {})
  return {
    create: (body) => {
      if (input.foreign?.[typeKey(body)]?.[objectKey(body)] !== undefined || slot(body)[objectKey(body)] !== undefined) {
        throw new ServerError('AlreadyExists', `${typeKey(body)} ${objectKey(body)} already exists`)
      }
      slot(body)[objectKey(body)] = defaultOnCreate(body, input.server)
    },
    update: (body) => {
      const old = slot(body)[objectKey(body)]
      if (old === undefined) throw new ServerError('NotFound', `${typeKey(body)} ${objectKey(body)} not found`)
      slot(body)[objectKey(body)] = defaultOnUpdate(old, body, input.server)
    },
    delete: (o) => {
      delete slot(o)[objectKey(o)]
      if (typeKey(o) === 'Service.v1') input.server.releaseNodePorts(objectKey(o))
    }
  }
}

// The log line of one event, as the properties print it.
function operation(e: ChildEvent): string {
  const target = `${e.type} ${e.key}`
  if (e.verb === 'delete') return e.why === 'Recreate' ? `delete (Recreate) ${target}` : `delete ${target}`
  if (e.verb !== 'skip') return `${e.verb} ${target}`
  if (e.why === 'AlreadyExists') return `create refused (AlreadyExists) ${target}`
  return e.why === 'OnDelete' ? `unchanged (OnDelete) ${target}` : `not updated (${e.why ?? ''}) ${target}`
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
    if (labels['controller-uid'] !== parentMeta.uid)
      throw new Error(`labels on desired child ${typeKey(c)} ${objectKey(c)} don't match parent selector`)
  }
  return c
}
