/**
 * Metacontroller's default child apply ("dynamic apply"), reproduced as pure functions.
 *
 * Read from Metacontroller v4.17.2: `pkg/dynamic/apply/apply.go` (the 3-way merge and the
 * last-applied annotation) and `ApplyUpdate` in `pkg/controller/common/manage_children.go` (what
 * is reverted after the merge and when an update is sent). Test code only: the unit tests'
 * convergence properties and the cluster driver share it, so both see the same merge.
 */

// The ObjectMeta fields `ApplyUpdate` copies back from the observed object after merging
// (`objectMetaSystemFields`, with managedFields). Their one home is the product's list: the hooks
// strip these and ownerReferences from every object they answer back. merge.test.ts checks the
// reverting against field names it writes out itself: a product list without uid, resourceVersion
// or generation fails there.
import { SERVER_METADATA_FIELDS } from '../../hooks/k8s/objects.ts'

/** A JSON value as Metacontroller holds it (Go's `interface{}` from a JSON decoder). */
export type Json = null | boolean | number | string | Json[] | JsonObject
/** A JSON object. */
export interface JsonObject {
  [key: string]: Json
}

/** Annotation in which the dynamic apply records the desired object it last applied. */
export const LAST_APPLIED_ANNOTATION = 'metacontroller.k8s.io/last-applied-configuration'

/**
 * Field names guessed as list-map keys, highest precedence first (`knownMergeKeys` in apply.go).
 * A list merges by key only when every item of all three versions is an object having the key.
 */
export const MERGE_KEYS = ['containerPort', 'port', 'mountPath', 'name', 'uid', 'ip', 'path'] as const

/** True for a JSON object (not null, not an array). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Own-key lookup, so that keys such as `constructor` or `__proto__` are plain data. */
function has(obj: JsonObject, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key)
}

/** Assignment that never hits a prototype setter (`__proto__` is a valid JSON key). */
function put(obj: JsonObject, key: string, value: Json): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true })
}

/** A deep copy; `undefined` members are dropped as JSON would drop them. */
export function clone<T extends Json>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => clone(item)) as T
  if (isObject(value)) {
    const out: JsonObject = {}
    for (const key of Object.keys(value)) {
      const member = value[key]
      if (member !== undefined) put(out, key, clone(member))
    }
    return out as T
  }
  return value
}

/**
 * Structural equality with Go's `reflect.DeepEqual` semantics over decoded JSON: a key holding
 * null differs from an absent key, and `[]` differs from null. (Go also tells int64 80 from
 * float64 80.0; JavaScript numbers cannot, so `80.0` and `80` are equal here.)
 */
export function deepEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => deepEqual(item, b[i]))
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a)
    if (keys.length !== Object.keys(b).length) return false
    return keys.every((key) => has(b, key) && deepEqual(a[key], b[key]))
  }
  return false
}

/**
 * JSON text exactly as Go's `encoding/json.Marshal` writes a decoded object: map keys sorted,
 * `<`, `>`, `&`, U+2028 and U+2029 escaped. The annotation's bytes then match Metacontroller's.
 */
export function goJson(value: Json): string {
  const text = JSON.stringify(sortKeys(value))
  return text.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

function sortKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (!isObject(value)) return value
  const out: JsonObject = {}
  for (const key of Object.keys(value).sort()) put(out, key, sortKeys(value[key] as Json))
  return out
}

/**
 * `metadata.annotations` as Go's `Unstructured.GetAnnotations` reads it: null when absent, and
 * also null when any value is not a string (the accessor fails and the error is discarded).
 */
function stringMap(obj: JsonObject, field: 'annotations' | 'labels'): Record<string, string> | null {
  const meta = obj.metadata
  if (!isObject(meta)) return null
  const map = meta[field]
  if (!isObject(map)) return null
  const out: Record<string, string> = {}
  for (const key of Object.keys(map)) {
    const value = map[key]
    if (typeof value !== 'string') return null
    out[key] = value
  }
  return out
}

/** Sets `metadata.<field>` to a string map, creating `metadata` when it is missing. */
function setStringMap(obj: JsonObject, field: 'annotations' | 'labels', map: Record<string, string>): void {
  if (!isObject(obj.metadata)) put(obj, 'metadata', {})
  put(obj.metadata as JsonObject, field, { ...map })
}

/**
 * The desired object recorded on `obj`, or null when it has no (or an empty) record. A record that
 * is not a JSON object fails the sync in Metacontroller, so it throws here.
 */
export function lastApplied(obj: JsonObject): JsonObject | null {
  const text = stringMap(obj, 'annotations')?.[LAST_APPLIED_ANNOTATION]
  if (text === undefined || text === '') return null
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new Error(`can't unmarshal "${LAST_APPLIED_ANNOTATION}" annotation: ${String(err)}`)
  }
  if (parsed === null) return null // Go decodes JSON null into a nil map
  if (!isObject(parsed)) throw new Error(`can't unmarshal "${LAST_APPLIED_ANNOTATION}" annotation: not an object`)
  return parsed
}

/** A copy of `obj` whose last-applied annotation records `desired` (Go JSON bytes). */
export function setLastApplied(obj: JsonObject, desired: JsonObject): JsonObject {
  const out = clone(obj)
  const annotations = stringMap(out, 'annotations') ?? {}
  annotations[LAST_APPLIED_ANNOTATION] = goJson(desired)
  setStringMap(out, 'annotations', annotations)
  return out
}

/**
 * The 3-way merge: a copy of `observed` with the change from `lastApplied` to `desired` applied.
 * Keys set in desired win (maps recurse, list maps merge by key, everything else is replaced);
 * keys in lastApplied but not in desired are removed; keys neither ever set are kept.
 */
export function merge(observed: JsonObject, lastApplied: JsonObject | null, desired: JsonObject): JsonObject {
  return mergeObject(clone(observed), lastApplied, desired)
}

// The destination's type decides, as in apply.go's merge(): a last-applied or desired value of
// another type counts as absent (Go's failed type assertion yields a nil map or slice).
function mergeValue(dest: Json | undefined, last: Json | undefined, desired: Json): Json {
  if (isObject(dest)) return mergeObject(dest, isObject(last) ? last : null, isObject(desired) ? desired : null)
  if (Array.isArray(dest)) {
    return mergeArray(dest, Array.isArray(last) ? last : null, Array.isArray(desired) ? desired : null)
  }
  return clone(desired)
}

function mergeObject(dest: JsonObject, last: JsonObject | null, desired: JsonObject | null): JsonObject {
  for (const key of Object.keys(last ?? {})) {
    if (desired === null || !has(desired, key)) delete dest[key]
  }
  for (const key of Object.keys(desired ?? {})) {
    const value = (desired as JsonObject)[key] as Json
    put(dest, key, mergeValue(has(dest, key) ? dest[key] : undefined, last && has(last, key) ? last[key] : undefined, value))
  }
  return dest
}

// A desired value that is not a list replaces an atomic list with null (Go's nil slice).
function mergeArray(dest: Json[], last: Json[] | null, desired: Json[] | null): Json {
  const key = detectListMapKey(dest, last ?? [], desired ?? [])
  if (key === '') return desired === null ? null : clone(desired)
  return mergeListMap(key, dest, last ?? [], desired ?? [])
}

/**
 * The list-map key Metacontroller would guess for these versions of one list: the first of
 * {@link MERGE_KEYS} that every item has (a null value counts as having it), or '' when any item
 * is not an object, when no item exists at all, or when no known key is common to all items.
 */
export function detectListMapKey(...lists: Json[][]): string {
  let common: Set<string> | null = null
  for (const list of lists) {
    for (const item of list) {
      if (!isObject(item)) return ''
      if (common === null) {
        common = new Set(Object.keys(item))
        continue
      }
      for (const key of [...common]) if (!has(item, key)) common.delete(key)
    }
  }
  return MERGE_KEYS.find((key) => common?.has(key) === true) ?? ''
}

/**
 * The map key of a list item: strings as they are, anything else as Go's `fmt.Sprintf("%v")`
 * prints it, so the number 80 and the string "80" are the same item.
 */
export function mergeKeyString(value: Json | undefined): string {
  return typeof value === 'string' ? value : goFormat(value)
}

function goFormat(value: Json | undefined): string {
  if (value === null || value === undefined) return '<nil>'
  if (typeof value === 'boolean') return String(value)
  if (typeof value === 'number') return goNumber(value)
  if (typeof value === 'string') return value
  if (Array.isArray(value)) return `[${value.map(goFormat).join(' ')}]`
  return `map[${Object.keys(value)
    .sort()
    .map((k) => `${k}:${goFormat(value[k])}`)
    .join(' ')}]`
}

// Decoded integers are int64 in Metacontroller (printed in full); other numbers are float64,
// which %v prints in shortest form with an exponent when it is below -4 or at least 6
// (checked against Go 1.26: 1234567.5 -> 1.2345675e+06, 123456.5 -> 123456.5, 1e-05).
function goNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 2 ** 63) return BigInt(n).toString()
  const [mantissa, exp] = n.toExponential().split('e') as [string, string]
  const e = Number(exp)
  if (e < -4 || e >= 6) return `${mantissa}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`
  return String(n)
}

function mergeListMap(key: string, dest: Json[], last: Json[], desired: Json[]): Json[] {
  const itemKey = (item: Json): string => mergeKeyString((item as JsonObject)[key])
  const toMap = (list: Json[]): Map<string, Json> => new Map(list.map((item) => [itemKey(item), item]))
  const destMap = toMap(dest)
  const lastMap = toMap(last)
  const desiredMap = toMap(desired)
  for (const k of lastMap.keys()) if (!desiredMap.has(k)) destMap.delete(k)
  for (const [k, value] of desiredMap) destMap.set(k, mergeValue(destMap.get(k), lastMap.get(k), value))

  // Observed order first, then new desired items in desired order. The first loop does not skip
  // keys already added (as in apply.go), so duplicate keys in the observed list all come out as
  // copies of the one merged item.
  const out: Json[] = []
  const added = new Set<string>()
  for (const item of dest) {
    const k = itemKey(item)
    if (destMap.has(k)) {
      out.push(clone(destMap.get(k) as Json))
      added.add(k)
    }
  }
  for (const item of desired) {
    const k = itemKey(item)
    if (!added.has(k)) {
      out.push(clone(destMap.get(k) as Json))
      added.add(k)
    }
  }
  return out
}

/** What {@link applyUpdate} computed: the object an InPlace update would PUT, and whether to send it. */
export interface ApplyResult {
  /** The merged object, last-applied annotation updated, system metadata and status as observed. */
  object: JsonObject
  /** False when the merged object equals the observed one: Metacontroller then sends nothing. */
  changed: boolean
}

/**
 * Metacontroller's `ApplyUpdate` followed by its no-op check: merge `desired` into `observed`
 * against the observed last-applied record, revert system metadata and `status`, record `desired`.
 */
export function applyUpdate(observed: JsonObject, desired: JsonObject): ApplyResult {
  const recorded = lastApplied(observed)
  const update = withoutLastApplied(desired)
  const object = merge(observed, recorded, update)
  for (const field of SERVER_METADATA_FIELDS) revert(object, observed, 'metadata', field)
  revert(object, observed, 'status')
  // Without an observed metadata map, Go's merge puts desired's own metadata map into the result,
  // so reverting system fields also strips them from the record. (Never so for a stored object.)
  if (!isObject(observed.metadata) && isObject(update.metadata)) {
    for (const field of SERVER_METADATA_FIELDS) delete update.metadata[field]
  }
  const result = setLastApplied(object, update)
  return { object: result, changed: !deepEqual(result, observed) }
}

/**
 * `desired` without a last-applied annotation of its own (`nullifyLastAppliedAnnotation`); an
 * annotation map left empty stays as `{}`, as Go's SetAnnotations leaves it.
 */
export function withoutLastApplied(desired: JsonObject): JsonObject {
  const out = clone(desired)
  const annotations = stringMap(out, 'annotations')
  if (annotations === null || !(LAST_APPLIED_ANNOTATION in annotations)) return out
  delete annotations[LAST_APPLIED_ANNOTATION]
  setStringMap(out, 'annotations', annotations)
  return out
}

/** Makes `path` in `target` what it is in `source`: copied when present there, removed otherwise. */
function revert(target: JsonObject, source: JsonObject, ...path: string[]): void {
  const parents = path.slice(0, -1)
  const leaf = path[path.length - 1] as string
  let from: Json | undefined = source
  for (const key of parents) from = isObject(from) && has(from, key) ? from[key] : undefined
  let to: JsonObject = target
  if (isObject(from) && has(from, leaf)) {
    for (const key of parents) {
      if (!isObject(to[key])) put(to, key, {})
      to = to[key] as JsonObject
    }
    put(to, leaf, clone(from[leaf] as Json))
    return
  }
  for (const key of parents) {
    const next: Json | undefined = has(to, key) ? to[key] : undefined
    if (!isObject(next)) return
    to = next
  }
  delete to[leaf]
}

/**
 * Paths at which two JSON values differ, each with both sides, for failure messages:
 * `spec.ports[0].nodePort: 30001 -> (absent)`.
 */
export function jsonDiff(before: Json | undefined, after: Json | undefined, path = ''): string[] {
  if (deepEqual(before, after)) return []
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()
    return keys.flatMap((k) =>
      jsonDiff(has(before, k) ? before[k] : undefined, has(after, k) ? after[k] : undefined, path === '' ? k : `${path}.${k}`)
    )
  }
  if (Array.isArray(before) && Array.isArray(after) && before.length === after.length) {
    return before.flatMap((item, i) => jsonDiff(item, after[i], `${path}[${i}]`))
  }
  const show = (v: Json | undefined): string => (v === undefined ? '(absent)' : JSON.stringify(v))
  return [`${path === '' ? '(root)' : path}: ${show(before)} -> ${show(after)}`]
}
