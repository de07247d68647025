/**
 * Field access for the API-server stand-in, as Go's decoded structs behave: a struct written to
 * exists, a missing list reads as empty, and a default fills a field only while it is unset.
 * Shared by the defaulting modules and the simulated Metacontroller pass.
 */
import { isObject, type Json, type JsonObject } from './merge.ts'

/** The object at `key`, created (and stored) when absent or not an object. */
export const obj = (parent: JsonObject, key: string): JsonObject => {
  if (!isObject(parent[key])) parent[key] = {}
  return parent[key]
}

/** The object items of the list at `key`; none when absent. */
export const list = (parent: JsonObject, key: string): JsonObject[] => (Array.isArray(parent[key]) ? parent[key].filter(isObject) : [])

/** Sets `key` to `value` when it is absent, null or the empty string. */
export const setDefault = (target: JsonObject, key: string, value: Json): void => {
  if (target[key] === undefined || target[key] === null || target[key] === '') target[key] = value
}

/**
 * A deep copy with every plain object's keys in reverse order (arrays keep theirs; a Date or
 * other class instance is shared as it is): the same data as
 * another encoder might send it. A builder whose output must not depend on key order is run on
 * both and compared byte for byte.
 */
export function reversedKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v: unknown) => reversedKeys(v)) as T
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return value
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reversedKeys(v)])
  ) as T
}
