/**
 * Canonical JSON and short content hashes.
 *
 * A hash recorded on an object (the Pod's `worker.gpustack.ai/pod-hash`, a cell's template hash)
 * must not change when only key order changes, so it is taken over canonical JSON: object keys
 * sorted at every depth, arrays kept in order, `undefined` members dropped as JSON.stringify does.
 */
import { createHash } from 'node:crypto'
import { setOwn } from './objects.ts'

/**
 * JSON text of `value` with object keys sorted at every depth: exactly
 * `JSON.stringify(sortKeysDeep(value))`, written out directly instead of building the sorted copy
 * first (the Pod hash of every Instance sync takes one; the copy was most of its cost). Members
 * JSON.stringify leaves out (undefined, functions, symbols) are left out of objects and written
 * as `null` in arrays; undefined at the top gives undefined, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  return writeCanonical(value) as string
}

function writeCanonical(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return quoted(value)
    case 'number':
      // JSON's own number text (NaN and the infinities become null).
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'object': {
      if (value === null) return 'null'
      if (Array.isArray(value)) {
        let text = '['
        // An index loop: a hole, like an undefined member, is written as null.
        for (let i = 0; i < value.length; i++) text += (i > 0 ? ',' : '') + (writeCanonical(value[i]) ?? 'null')
        return `${text}]`
      }
      const record = value as Record<string, unknown>
      let text = '{'
      for (const key of sortedKeys(record)) {
        const member = writeCanonical(record[key])
        if (member === undefined) continue
        text += (text.length > 1 ? ',' : '') + quoted(key) + ':' + member
      }
      return `${text}}`
    }
    case 'bigint':
      // JSON.stringify refuses it, and so does the canonical form.
      throw new TypeError('Do not know how to serialize a BigInt')
    default:
      return undefined
  }
}

/**
 * `JSON.stringify(text)`: the text in quotes as it is, unless it holds a character JSON escapes (a
 * quote, a backslash, a control character) or a surrogate (escaped when unpaired), which JSON's
 * own quoting handles. Kubernetes keys and values rarely hold any; the call per string was a
 * good part of a Pod's hash.
 */
function quoted(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(text)
  }
  return `"${text}"`
}

/**
 * The keys of `record` in the order the key-sorted copy lists them: sorted, except that an object
 * lists its array-index keys (`"0"`, `"42"`) first, in numeric order, whatever order they were
 * added in. Recorded hashes were taken over that order, so it stays.
 */
function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record).sort()
  if (!keys.some(isArrayIndex)) return keys
  const indices = keys.filter(isArrayIndex).sort((a, b) => Number(a) - Number(b))
  return [...indices, ...keys.filter((key) => !isArrayIndex(key))]
}

/** A canonical decimal integer from 0 to 2^32 - 2: what JavaScript orders first among an object's keys. */
function isArrayIndex(key: string): boolean {
  const first = key.charCodeAt(0)
  if (first < 0x30 || first > 0x39) return false
  return /^(0|[1-9][0-9]{0,9})$/.test(key) && Number(key) <= 4294967294
}

/**
 * `value` with object keys sorted at every depth (arrays keep their order, `undefined` members are
 * dropped), for byte-stable JSON and YAML; typed as its input. (One level only, for a flat map:
 * `sortedRecord` in objects.ts.) Own keys only, written as own data properties, so a
 * key such as `__proto__` survives as a key. Recursion follows the nesting of its input, which
 * every caller has bounded (request bodies by their parser, see `json.ts`).
 */
export function sortKeysDeep<T>(value: T): T {
  return sortedDeep(value) as T
}

function sortedDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedDeep)
  if (typeof value !== 'object' || value === null) return value
  const record = value as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(record).sort()) if (record[key] !== undefined) setOwn(out, key, sortedDeep(record[key]))
  return out
}

/** First `length` hex digits of the SHA-256 of the canonical JSON of `value`. */
export function contentHash(value: unknown, length = 10): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, length)
}
