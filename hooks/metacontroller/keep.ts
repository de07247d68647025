/**
 * Answering an observed child that must stay exactly as it is (docs/metacontroller.md rule 5).
 *
 * Metacontroller's dynamic apply (`ApplyUpdate` in `pkg/controller/common/manage_children.go`,
 * `Merge` in `pkg/dynamic/apply/apply.go`) merges the answer into the observed object against the
 * record in the observed object's own `metacontroller.k8s.io/last-applied-configuration`
 * annotation: every key of the answer is written over the observed object (maps recurse, lists of
 * objects sharing a known key merge item by item, other lists are replaced), every key of the
 * record that the answer lacks is removed, and the answer becomes the new record. Whoever may edit
 * a child may write that annotation, so the record is tenant input:
 *
 * - Answering the record (as this function once did) answers whatever it says: another kind, in
 *   another namespace, under another name, which Metacontroller creates with its cluster-wide
 *   rights. Even with the identity forced back, its spec, labels and data would be written over
 *   the child with Metacontroller's rights, past any admission rule that holds the tenant back
 *   (the CellNodeSet policy refuses a tenant's spec change but not an annotation change).
 * - Answering the observed object as it is would record ownerReferences, managedFields and
 *   server defaults; a later answer without them would strip them (orphaning the child).
 *
 * So a kept child is the observed object in the shape of its record: its apiVersion and kind are
 * those of the type key it was observed under (observed.ts), its name and namespace its own
 * metadata's, and every other field is a field the record names that the observed object has,
 * with the observed object's value (in the record's key order, or sorted where the record has no
 * say, so the order of keys in a request never shows in the answer). Lists follow the merge: equal lists as they are, a list map
 * (every item an object with one of the merge keys) item by item for the items both have, any
 * other list whole as observed. Left out: `status` and the server's metadata (the merge reverts
 * both), and the last-applied annotation (Metacontroller drops it from every answer).
 *
 * What that buys, for any record at all:
 * - The merge writes no value that was not already on the object. Every answered value is the
 *   observed one, and the record's keys missing from the answer are keys the object lacks, so
 *   nothing is removed either; only the annotation can change, to this answer, which holds
 *   observed values only (unit-tested against tests/support/merge.ts, an imitation of the merge).
 * - A child Metacontroller applied and nobody touched is answered exactly as its record says
 *   (the record's values are the observed ones), so its merge is a no-op, as before.
 * - A hand edit of a kept child stays as the person made it: nothing can tell the genuine record
 *   from one written by hand, so nothing is restored from it.
 *
 * A child without a readable record (absent, not JSON, nested past the bound every input has, or
 * not a JSON object) is answered as observed minus `status`, system metadata and Metacontroller's
 * annotations: observed values only, recorded by Metacontroller once.
 */
import {
  SERVER_METADATA_FIELDS,
  SYSTEM_METADATA_FIELDS,
  type KubeObject,
  annotationOf,
  cloneJson,
  isRecord,
  recordOf,
  setOwn
} from '../k8s/objects.ts'
import { sortKeysDeep } from '../k8s/hash.ts'
import { parseJsonBounded } from '../k8s/json.ts'
import { DECORATOR_ANNOTATION, LAST_APPLIED_ANNOTATION } from './observed.ts'

/**
 * Keys Metacontroller guesses as list-map merge keys, highest precedence first (`knownMergeKeys`
 * in `pkg/dynamic/apply/apply.go`).
 */
export const LIST_MAP_KEYS = ['containerPort', 'port', 'mountPath', 'name', 'uid', 'ip', 'path'] as const

const SERVER_METADATA: ReadonlySet<string> = new Set(SERVER_METADATA_FIELDS)

/** The desired form of an observed child that must stay exactly as it is (module doc). */
export function keepAsIs(observed: KubeObject): KubeObject {
  const text = annotationOf(observed, LAST_APPLIED_ANNOTATION)
  const record = text === undefined ? undefined : parseJsonBounded(text)
  const { name, namespace } = observed.metadata
  const kept = isRecord(record) ? inShapeOf(record, observed) : withoutSystemFields(observed)
  const metadata: Record<string, unknown> = { ...kept.metadata, name }
  if (typeof namespace === 'string' && namespace !== '') metadata.namespace = namespace
  else delete metadata.namespace
  return { ...kept, apiVersion: observed.apiVersion, kind: observed.kind, metadata }
}

/** The observed object in the shape of the record: the record's keys, the observed values. */
function inShapeOf(record: Record<string, unknown>, observed: KubeObject): KubeObject {
  const top = Object.keys(record).filter((k) => !['apiVersion', 'kind', 'metadata', 'status'].includes(k) && Object.hasOwn(observed, k))
  const recordMetadata = isRecord(record.metadata) ? record.metadata : {}
  const observedMetadata = observed.metadata as Record<string, unknown>
  const metadata = recordOf(
    Object.keys(recordMetadata)
      .filter((k) => k !== 'name' && k !== 'namespace' && !SERVER_METADATA.has(k) && Object.hasOwn(observedMetadata, k))
      .map((k) => {
        const value = shaped(recordMetadata[k], observedMetadata[k])
        return [k, k === 'annotations' ? without(value, [LAST_APPLIED_ANNOTATION]) : value] as const
      })
  )
  return { ...recordOf(top.map((k) => [k, shaped(record[k], observed[k])] as const)), metadata }
}

/** `observed` in the shape of `recorded` (module doc); every value in the result is observed. */
function shaped(recorded: unknown, observed: unknown): unknown {
  if (isRecord(recorded) && isRecord(observed)) {
    const out: Record<string, unknown> = {}
    for (const k of Object.keys(recorded)) if (Object.hasOwn(observed, k)) setOwn(out, k, shaped(recorded[k], observed[k]))
    return out
  }
  if (Array.isArray(recorded) && Array.isArray(observed)) return shapedList(recorded, observed)
  return sortKeysDeep(observed)
}

/**
 * A list as the merge treats it. Items are paired by merge key exactly as Metacontroller pairs
 * them; where that pairing cannot be reproduced here (a key value that is not a string, integer
 * or boolean, or one key on two items), the observed list is answered whole, which the merge
 * leaves as it is.
 */
function shapedList(recorded: unknown[], observed: unknown[]): unknown[] {
  if (jsonEqual(recorded, observed)) return cloneJson(recorded)
  const key = listMapKey(recorded, observed)
  const observedItems = key === undefined ? undefined : itemsByKey(observed, key)
  const recordedItems = key === undefined ? undefined : itemsByKey(recorded, key)
  if (key === undefined || observedItems === undefined || recordedItems === undefined) return sortKeysDeep(observed)
  return [...recordedItems].flatMap(([k, item]) => {
    const match = observedItems.get(k)
    return match === undefined ? [] : [shaped(item, match)]
  })
}

/**
 * The merge key Metacontroller guesses for these lists (`detectListMapKey`): the first of
 * {@link LIST_MAP_KEYS} that every item has, when every item is an object.
 */
function listMapKey(...lists: unknown[][]): string | undefined {
  let common: Set<string> | undefined
  for (const item of lists.flat()) {
    if (!isRecord(item)) return undefined
    if (common === undefined) common = new Set(Object.keys(item))
    else for (const k of [...common]) if (!Object.hasOwn(item, k)) common.delete(k)
  }
  return LIST_MAP_KEYS.find((k) => common?.has(k) === true)
}

/**
 * The items of a list map by key, in list order, as Metacontroller's `stringMergeKey` names them
 * (a string as it is, an integer or a boolean as Go prints it); undefined when a key value is of
 * another kind or two items share one.
 */
function itemsByKey(list: unknown[], key: string): Map<string, Record<string, unknown>> | undefined {
  const out = new Map<string, Record<string, unknown>>()
  for (const item of list) {
    const value = isRecord(item) ? item[key] : undefined
    const name = typeof value === 'string' ? value : Number.isSafeInteger(value) || typeof value === 'boolean' ? String(value) : undefined
    if (!isRecord(item) || name === undefined || out.has(name)) return undefined
    out.set(name, item)
  }
  return out
}

/** Equality of JSON values, own keys only (so `__proto__` is a key like any other). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]))
  if (!isRecord(a) || !isRecord(b)) return false
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]))
}

/** A map of string values without `keys`; any other value as it is. */
function without(value: unknown, keys: readonly string[]): unknown {
  if (!isRecord(value)) return value
  return recordOf(Object.keys(value).flatMap((k) => (keys.includes(k) ? [] : [[k, value[k]] as const])))
}

/** The observed object minus `status`, system metadata and Metacontroller's annotations. */
function withoutSystemFields(observed: KubeObject): KubeObject {
  const { status: _status, ...rest } = observed
  const metadata: Record<string, unknown> = { ...observed.metadata }
  for (const field of SYSTEM_METADATA_FIELDS) delete metadata[field]
  const annotations = without(metadata.annotations, [LAST_APPLIED_ANNOTATION, DECORATOR_ANNOTATION])
  if (isRecord(annotations) && Object.keys(annotations).length === 0) delete metadata.annotations
  else if (annotations !== undefined) metadata.annotations = annotations
  return cloneJson({ ...rest, metadata })
}
