/**
 * Canonical JSON and short content hashes.
 *
 * A hash recorded on an object (the Pod's `worker.gpustack.ai/pod-hash`, a cell's template hash)
 * must not change when only key order changes, so it is taken over canonical JSON: object keys
 * sorted at every depth, arrays kept in order, `undefined` members dropped as JSON.stringify does.
 */
import { createHash } from 'node:crypto'
import { recordOf } from './objects.ts'

/** JSON text of `value` with object keys sorted at every depth. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value))
}

/**
 * `value` with object keys sorted at every depth (arrays keep their order, `undefined` members are
 * dropped), for byte-stable JSON and YAML. Own keys only, written as own data properties, so a
 * key such as `__proto__` survives as a key. Recursion follows the nesting of its input, which
 * every caller has bounded (request bodies by their parser, see `json.ts`).
 */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null) return value
  const record = value as Record<string, unknown>
  return recordOf(
    Object.keys(record)
      .sort()
      .filter((key) => record[key] !== undefined)
      .map((key) => [key, sortKeys(record[key])] as const)
  )
}

/** First `length` hex digits of the SHA-256 of the canonical JSON of `value`. */
export function contentHash(value: unknown, length = 10): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, length)
}
