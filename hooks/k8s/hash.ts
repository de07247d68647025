/**
 * Canonical JSON and short content hashes.
 *
 * A hash recorded on an object (the Pod's `worker.gpustack.ai/pod-hash`, a cell's template hash)
 * must not change when only key order changes, so it is taken over canonical JSON: object keys
 * sorted at every depth, arrays kept in order, `undefined` members dropped as JSON.stringify does.
 */
import { createHash } from 'node:crypto'

/** JSON text of `value` with object keys sorted at every depth. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value))
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null) return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key]
    if (member !== undefined) out[key] = sortKeys(member)
  }
  return out
}

/** First `length` hex digits of the SHA-256 of the canonical JSON of `value`. */
export function contentHash(value: unknown, length = 10): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, length)
}
