/**
 * Why a composite parent is synced: the watch events that queue it, decided as Metacontroller
 * v4.17.2's event handlers decide them (`pkg/controller/composite/controller.go`), so a caller
 * feeding real watch events (watch.ts) to a work queue syncs when Metacontroller would:
 *
 * - the parent's add and delete queue it; an update queues it too (`updateParentObject`), its own
 *   status write and the finalizer Metacontroller adds included, unless
 *   `parentResource.ignoreStatusChanges` is true: then only when the generation, the labels or the
 *   annotations changed or a deletionTimestamp is set;
 * - a child's add, update (only when its resourceVersion moved) and delete queue the parent its
 *   controller reference names, when that is of the parent's kind (`onChildAdd`, `onChildUpdate`,
 *   `onChildDelete`, `resolveControllerRef`).
 *
 * Not decided here: related objects (the customize manager's `findRelatedParents`, played by
 * `Driver.relatedParents`), `resyncAfterSeconds` and the resync period (timers), and the retry of a
 * failed sync. The queue (client-go's workqueue) folds the rest: a key queued while it waits is
 * queued once, and a key queued while it syncs runs once more after.
 */
import { deepEqual, isObject, type Json, type JsonObject } from '../../support/merge.ts'
import type { CompositeSpec } from './driver-manifest.ts'

/** What queued a sync. */
export type SyncCause =
  /** The parent was created (the informer's add). */
  | 'created'
  /** A child of the parent was created, updated or deleted. */
  | 'child'
  /** An update of the parent that changed its status (its own status write). */
  | 'status'
  /** An update of the parent that changed its finalizers (the one Metacontroller adds). */
  | 'finalizer'
  /** An update of the parent that changed its generation, labels or annotations, or deletes it. */
  | 'parent'
  /** A related object the customize answer names changed. */
  | 'related'
  /** Labels or annotations a decorator's sync wrote on the object it decorates. */
  | 'labels'
  /** The sync failed and is retried. */
  | 'retry'

const meta = (o: JsonObject): JsonObject => (isObject(o.metadata) ? o.metadata : {})
const field = (o: JsonObject, key: string): Json | undefined => meta(o)[key]

/**
 * Whether an update of the parent from `old` to `cur` queues it, and as what: undefined when
 * `ignoreStatusChanges` drops it. A status change is named before a finalizer change, and either
 * before `parent` (an update that changed none of these is `parent` too).
 */
export function parentUpdateCause(controller: CompositeSpec, old: JsonObject, cur: JsonObject): SyncCause | undefined {
  // The resync re-delivers the cached object itself, which queues the parent either way.
  if (old === cur) return 'parent'
  const sameMeta =
    deepEqual(field(old, 'generation'), field(cur, 'generation')) &&
    deepEqual(field(old, 'labels') ?? {}, field(cur, 'labels') ?? {}) &&
    deepEqual(field(old, 'annotations') ?? {}, field(cur, 'annotations') ?? {}) &&
    field(cur, 'deletionTimestamp') === undefined
  if (controller.ignoreStatusChanges && sameMeta) return undefined
  if (!sameMeta) return 'parent'
  if (!deepEqual(old.status, cur.status)) return 'status'
  if (!deepEqual(field(old, 'finalizers') ?? [], field(cur, 'finalizers') ?? [])) return 'finalizer'
  return 'parent'
}

/**
 * The name of the parent a child event queues: the child's controller reference when it names the
 * parent's kind and group; none for another controller's child. An orphan queues every parent
 * whose selector matches it (`findPotentialParents`); that is not decided here.
 */
export function childEventParent(controller: CompositeSpec, parentKind: string, child: JsonObject): string | undefined {
  const refs = Array.isArray(field(child, 'ownerReferences')) ? (field(child, 'ownerReferences') as Json[]) : []
  const group = (apiVersion: Json | undefined): string => {
    const text = typeof apiVersion === 'string' ? apiVersion : ''
    return text.includes('/') ? (text.split('/')[0] ?? '') : ''
  }
  const owner = refs.find((r) => isObject(r) && r.controller === true)
  if (!isObject(owner) || owner.kind !== parentKind) return undefined
  if (group(owner.apiVersion) !== group(controller.parent.apiVersion)) return undefined
  return typeof owner.name === 'string' ? owner.name : undefined
}
