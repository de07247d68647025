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

/**
 * Read-only ObjectMeta fields the API server fills in. Metacontroller's dynamic apply copies them
 * back from the observed child after its merge (its `objectMetaSystemFields`, here with
 * managedFields), so a desired value for them never causes a diff.
 */
export const SERVER_METADATA_FIELDS = [
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields'
] as const

/**
 * Metadata a desired object never carries (docs/metacontroller.md rule 5): the server's fields, and
 * ownerReferences, which Metacontroller sets on create and does not copy back. Answered back, they
 * would be recorded as "last applied", and a later answer without them would strip them.
 */
export const SYSTEM_METADATA_FIELDS = [...SERVER_METADATA_FIELDS, 'ownerReferences'] as const

/** True when `value` is a non-null, non-array object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * `record[key]` when `key` is an own property of `record`, else undefined.
 *
 * Keys in hook requests are chosen by users (names of types, namespaces, Secrets, labels): read
 * by plain indexing, `constructor`, `toString` or `__proto__` would find a member of every
 * JavaScript object. Every lookup by such a key goes through here or through a `Map`.
 */
export function ownValue(record: unknown, key: string): unknown {
  return isRecord(record) && Object.hasOwn(record, key) ? record[key] : undefined
}

/** Reads a string label, or undefined (also when the stored value is not a string). */
export function labelOf(obj: KubeObject | undefined, key: string): string | undefined {
  const value = ownValue(obj?.metadata.labels, key)
  return typeof value === 'string' ? value : undefined
}

/** Reads a string annotation, or undefined (also when the stored value is not a string). */
export function annotationOf(obj: KubeObject | undefined, key: string): string | undefined {
  const value = ownValue(obj?.metadata.annotations, key)
  return typeof value === 'string' ? value : undefined
}

/** `value` when it is a record, else an empty one: a stored object's field read without a throw. */
export function asRecord(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {}
}

/** `value` when it is a non-empty string, else undefined: a stored object's string field read as given. */
export function asText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** An object's `metadata.name` when it is a string (empty included), else undefined: any stored value read without a throw. */
export function nameOf(object: unknown): string | undefined {
  const metadata = isRecord(object) ? object.metadata : undefined
  return isRecord(metadata) && typeof metadata.name === 'string' ? metadata.name : undefined
}

/** `namespace/name` of an object, or undefined when it has no name. */
export function keyOf(object: unknown): string | undefined {
  const metadata = isRecord(object) ? object.metadata : undefined
  const name = ownValue(metadata, 'name')
  const namespace = ownValue(metadata, 'namespace')
  return typeof name === 'string' && name !== '' ? `${typeof namespace === 'string' ? namespace : ''}/${name}` : undefined
}

/** `value` when it is an array, else an empty one: a stored object's list read without a throw. */
export function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

/**
 * A record with the given entries, built with own data properties only: a key such as
 * `__proto__` becomes an ordinary key instead of replacing the prototype, as `out[key] = v`
 * would. Entries are taken in order; a later duplicate key wins.
 */
export function recordOf<V>(entries: Iterable<readonly [string, V]>): Record<string, V> {
  return Object.fromEntries(entries)
}

/**
 * Sets `record[key]` as an own data property. `record[key] = value` with the key `__proto__`
 * would replace the record's prototype instead; this keeps it an ordinary key, as
 * {@link recordOf} does for a whole list of entries.
 */
export function setOwn<V>(record: Record<string, V>, key: string, value: V): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true })
  else record[key] = value
}

/**
 * `map` with its keys in sorted order, one level deep (own keys only), for byte-stable output;
 * typed as its input. (Every level: `sortKeysDeep` in hash.ts.)
 */
export function sortedRecord<T extends object>(map: T): T {
  const record = map as Readonly<Record<string, unknown>>
  return recordOf(
    Object.keys(record)
      .sort()
      .map((key) => [key, record[key]] as const)
  ) as T
}

/**
 * A deep copy of JSON data (plain objects, arrays, primitives), so builders never share structure
 * with their inputs. Several times cheaper than structuredClone on objects of a spec's size, which
 * showed in the profile of every sync. An own `__proto__` key stays an own key of the copy.
 */
export function cloneJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map(cloneJson) as T
  if (typeof value !== 'object' || value === null) return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    setOwn(out, key, cloneJson((value as Record<string, unknown>)[key]))
  }
  return out as T
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
