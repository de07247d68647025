/**
 * Reading the repository's manifests as the API server sees them: YAML documents as kubectl reads
 * them, paths into them, and the CEL rules a CRD declares.
 */
import { readFileSync } from 'node:fs'
import { parseAllDocuments } from 'yaml'
import { isObject, type Json, type JsonObject } from '../../support/merge.ts'

/** Every YAML document of a file, read as kubectl reads it (YAML 1.1), comments dropped. */
export function documents(path: string): JsonObject[] {
  return parseAllDocuments(readFileSync(path, 'utf8'), { version: '1.1' })
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]?.message ?? 'invalid YAML'}`)
      return doc.toJS() as unknown
    })
    .filter(isObject)
}

/** The object at `path` under `o`; throws naming the path when there is none. */
export function objectAt(o: Json | undefined, ...path: string[]): JsonObject {
  let at: Json | undefined = o
  for (const key of path) at = isObject(at) ? at[key] : undefined
  if (!isObject(at)) throw new Error(`no object at ${path.join('.')}`)
  return at
}

/** Every `message` of every `x-kubernetes-validations` rule in a schema. */
export function celMessages(schema: Json | undefined): string[] {
  if (Array.isArray(schema)) return schema.flatMap(celMessages)
  if (!isObject(schema)) return []
  const own = Array.isArray(schema['x-kubernetes-validations'])
    ? schema['x-kubernetes-validations'].filter(isObject).map((r) => String(r.message))
    : []
  return [
    ...own,
    ...Object.entries(schema)
      .filter(([k]) => k !== 'x-kubernetes-validations')
      .flatMap(([, v]) => celMessages(v))
  ]
}
