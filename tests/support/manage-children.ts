/**
 * Metacontroller's child management (`ManageChildren` with the default dynamic apply), written
 * once for both test layers: the unit layer's simulated pass (simulate.ts) runs it against an
 * in-memory API server built on the defaulting fixture, the cluster layer's driver
 * (tests/cluster/support/driver-children.ts) against a real one. Each layer supplies a
 * {@link ChildApi}; the rules (what is deleted, created, merged, skipped, in which order) live here
 * alone, so the two stand-ins cannot drift apart.
 *
 * The rules are a generator of writes so that one body serves a synchronous API (the unit
 * properties call it thousands of times inside fast-check) and an asynchronous one (HTTP).
 *
 * Read from Metacontroller v4.17.2: `pkg/controller/common/manage_children.go`,
 * `pkg/dynamic/apply` and `pkg/controller/decorator/controller.go` (`getChildren`).
 */
import { applyUpdate, jsonDiff, type JsonObject } from './merge.ts'
import { controllerOf, createBody, DECORATOR_ANNOTATION, isDeleting, meta, objectKey, strings, typeKey } from './children.ts'

/** The writes child management makes. Errors carry the API `Status.reason` as `reason`. */
export interface ChildApi {
  /** POST the body; an existing name fails with reason `AlreadyExists`. */
  create(body: JsonObject): Promise<unknown>
  /** PUT the merged object (it carries the observed resourceVersion). */
  update(body: JsonObject): Promise<unknown>
  /** DELETE the observed object (background propagation, its uid as precondition). */
  delete(observed: JsonObject): Promise<unknown>
}

/** {@link ChildApi} for an in-memory server that answers at once. */
export type SyncChildApi = { [K in keyof ChildApi]: (object: JsonObject) => unknown }

/** Owned children by type key (`Kind.apiVersion`), then object key (`namespace/name`). */
export type ChildrenByType = ReadonlyMap<string, ReadonlyMap<string, JsonObject>>

/** One pass of child management. */
export interface ManageInput {
  /** The parent (composite) or decorated object: the owner of what is created. */
  parent: JsonObject
  /** The owned children the hook was shown. */
  observed: ChildrenByType
  /** The answered children, already placed (namespace) and marked (selector label or decorator annotation). */
  desired: readonly JsonObject[]
  /** The update method of a child type (`OnDelete` when the controller names none). */
  methodOf(child: JsonObject): string
}

/** What a pass did to one child, or held back and why. */
export interface ChildEvent {
  /** `skip` is a write Metacontroller holds back (OnDelete, AlreadyExists, pending deletion, ...). */
  verb: 'create' | 'update' | 'delete' | 'skip'
  /** `Kind.apiVersion` */
  type: string
  /** `namespace/name` or `name` */
  key: string
  /**
   * For a delete: `not desired` or `Recreate`. For a skip: `AlreadyExists`, `OnDelete`,
   * `pending deletion`, or the reason of a refused update (`NotFound`, `Conflict`).
   */
  why?: string
  /** The changes of an update, or of the update an OnDelete or Recreate stands in for. */
  diff?: string[]
}

/** The outcome of a pass: events in order, and the failures Metacontroller would report. */
export interface ManageResult {
  events: ChildEvent[]
  /** One line per failed child; the rest were still managed. */
  errors: string[]
}

/** The API `Status.reason` an error carries (`KubeError` and the in-memory `ServerError` both do). */
export function reasonOf(err: unknown): string | undefined {
  return err instanceof Error && 'reason' in err && typeof err.reason === 'string' ? err.reason : undefined
}

/** Whether `o` is an attachment of `decorator` on `parent`: controller ref to it plus the decorator annotation. */
export function isAttachment(o: JsonObject, parent: JsonObject, decorator: string): boolean {
  return controllerOf(o)?.uid === meta(parent).uid && strings(o, 'annotations')[DECORATOR_ANNOTATION] === decorator
}

/** Child management against a real (asynchronous) API. */
export async function manageChildren(api: ChildApi, input: ManageInput): Promise<ManageResult> {
  const steps = manageSteps(input)
  let step = steps.next()
  while (step.done !== true) step = resume(steps, await settle(api, step.value))
  return step.value
}

/** Child management against an in-memory API that answers at once. */
export function manageChildrenSync(api: SyncChildApi, input: ManageInput): ManageResult {
  const steps = manageSteps(input)
  let step = steps.next()
  while (step.done !== true) step = resume(steps, attempt(api, step.value))
  return step.value
}

/** One write the rules ask for; a failure is thrown back into the rules at the `yield`. */
interface Write {
  verb: keyof ChildApi
  object: JsonObject
}

/** A write that failed, with what it threw. */
interface Failure {
  err: unknown
}

/** `write` against an asynchronous API: its failure, if any. */
const settle = (api: ChildApi, write: Write): Promise<Failure | undefined> =>
  Promise.resolve()
    .then(() => api[write.verb](write.object))
    .then(
      () => undefined,
      (err: unknown) => ({ err })
    )

/** `write` against an API that answers at once: its failure, if any. */
function attempt(api: SyncChildApi, write: Write): Failure | undefined {
  try {
    api[write.verb](write.object)
    return undefined
  } catch (err) {
    return { err }
  }
}

/** The rules' next write after one: on after a success, the error thrown back in at the `yield` after a failure. */
const resume = (steps: Generator<Write, ManageResult, void>, failure: Failure | undefined): IteratorResult<Write, ManageResult> =>
  failure === undefined ? steps.next() : steps.throw(failure.err)

const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? (apiVersion.split('/')[0] as string) : '')
// GetAllGVKs order: group, then version, then kind; objects by name (byte order, as Go sorts).
const typeOrder = (t: string): string => {
  const apiVersion = t.slice(t.indexOf('.') + 1)
  return `${groupOf(apiVersion)}\u0000${apiVersion.split('/').pop() ?? ''}\u0000${t.slice(0, t.indexOf('.'))}`
}
const byteOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
const sortTypes = (types: Iterable<string>): string[] => [...types].sort((a, b) => byteOrder(typeOrder(a), typeOrder(b)))
const byKey = <T>(entries: Iterable<[string, T]>): [string, T][] => [...entries].sort(([a], [b]) => byteOrder(a, b))

// ManageChildren: deletes first, then creates and updates. A failed write is recorded and the
// rest go on, so one bad child does not block the others.
function* manageSteps(input: ManageInput): Generator<Write, ManageResult, void> {
  const events: ChildEvent[] = []
  const errors: string[] = []
  const desired = new Map<string, Map<string, JsonObject>>()
  for (const d of input.desired) {
    const type = typeKey(d)
    desired.set(type, (desired.get(type) ?? new Map<string, JsonObject>()).set(objectKey(d), d))
  }
  for (const type of sortTypes(input.observed.keys())) {
    for (const [key, o] of byKey(input.observed.get(type) ?? [])) {
      if (isDeleting(o) || desired.get(type)?.has(key) === true) continue
      try {
        yield { verb: 'delete', object: o }
        events.push({ verb: 'delete', type, key, why: 'not desired' })
      } catch (err) {
        if (reasonOf(err) !== 'NotFound') errors.push(`can't delete ${type} ${key}: ${String(err)}`)
      }
    }
  }
  for (const type of sortTypes(desired.keys())) {
    for (const [key, want] of byKey(desired.get(type) ?? [])) {
      try {
        const have = input.observed.get(type)?.get(key)
        if (have === undefined) {
          try {
            yield { verb: 'create', object: createBody(want, input.parent) }
            events.push({ verb: 'create', type, key })
          } catch (err) {
            if (reasonOf(err) !== 'AlreadyExists') throw err
            events.push({ verb: 'skip', type, key, why: 'AlreadyExists' })
          }
          continue
        }
        const { object, changed } = applyUpdate(have, want)
        if (!changed) continue
        const diff = jsonDiff(have, object)
        const method = input.methodOf(want)
        if (isDeleting(have)) events.push({ verb: 'skip', type, key, why: 'pending deletion', diff })
        else if (method === 'OnDelete') events.push({ verb: 'skip', type, key, why: 'OnDelete', diff })
        else if (method === 'Recreate' || method === 'RollingRecreate') {
          try {
            yield { verb: 'delete', object: have }
            events.push({ verb: 'delete', type, key, why: 'Recreate', diff })
          } catch (err) {
            if (reasonOf(err) !== 'NotFound') throw err
          }
        } else if (method === 'InPlace' || method === 'RollingInPlace') {
          try {
            yield { verb: 'update', object }
            events.push({ verb: 'update', type, key, diff })
          } catch (err) {
            const reason = reasonOf(err)
            if (reason !== 'NotFound' && reason !== 'Conflict') throw err
            events.push({ verb: 'skip', type, key, why: reason, diff })
          }
        } else throw new Error(`invalid update strategy for ${String(want.kind)}: unknown method "${method}"`)
      } catch (err) {
        errors.push(`${type} ${key}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
  }
  return { events, errors }
}
