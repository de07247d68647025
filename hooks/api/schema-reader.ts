/**
 * A stored object read through its schema (style rule 3), for every reader of what the hooks or
 * the agent wrote before (api/cellnodeset-reader.ts, the cell pool's previous status): the CRD, the
 * types and what counts as readable never drift apart.
 *
 * A stored object can have any shape (an older release wrote it, a person edited it, the schema
 * changed since), so nothing here throws, and reads are own-property reads only. What passes is
 * kept, what fails is dropped and named: an object whose required field fails is dropped whole;
 * an optional field that fails is dropped from its object; a list entry that fails is dropped from
 * its list; of two entries of a list-map with the same key the first is kept. Objects are rebuilt
 * from the schema's own properties, so a key the schema does not name is never carried along.
 */
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { isRecord, ownValue, setOwn } from '../k8s/objects.ts'
import { commonSchemaMessage, invalidValueMessage, kindOf } from '../k8s/schema-messages.ts'

/** Where a read names what it dropped, one sentence per field. */
export interface ProblemSink {
  add(sentence: string): void
}

/** A sink for a read that drops what fails without saying so. */
export const UNREPORTED: ProblemSink = Object.freeze({ add: () => undefined })

/** The schema keywords the walk looks at. */
interface Shape {
  type?: unknown
  properties?: Record<string, TSchema>
  required?: string[]
  items?: TSchema
  'x-kubernetes-list-map-keys'?: string[]
}

/**
 * `value` with whatever fails `schema` dropped (the rules in the header), or undefined when the
 * value itself fails. Objects are rebuilt from the schema's own properties, so a key the schema
 * does not name is never carried along.
 */
export function keepValid(schema: TSchema, value: unknown, field: string, problems: ProblemSink): unknown {
  const shape = schema as Shape
  if (shape.type === 'object' && shape.properties !== undefined) {
    if (!isRecord(value)) return fail(schema, value, field, problems)
    const required = new Set(shape.required ?? [])
    const out: Record<string, unknown> = {}
    let whole = true
    for (const [key, property] of Object.entries(shape.properties)) {
      const child = `${field}.${key}`
      if (!Object.hasOwn(value, key)) {
        if (required.has(key)) {
          problems.add(`${child} is required`)
          whole = false
        }
        continue
      }
      const kept = keepValid(property, value[key], child, problems)
      if (kept !== undefined) setOwn(out, key, kept)
      else if (required.has(key)) whole = false
    }
    return whole ? out : undefined
  }
  if (shape.type === 'array' && shape.items !== undefined) {
    if (!Array.isArray(value)) return fail(schema, value, field, problems)
    const keys = shape['x-kubernetes-list-map-keys'] ?? []
    const seen = new Set<string>()
    const out: unknown[] = []
    value.forEach((item, index) => {
      const kept = keepValid(shape.items as TSchema, item, `${field}[${index}]`, problems)
      if (kept === undefined) return
      const identity = JSON.stringify(keys.map((k) => ownValue(kept, k)))
      if (keys.length > 0 && seen.has(identity)) {
        problems.add(`${field}[${index}] repeats the ${keys.join(', ')} of an earlier entry`)
        return
      }
      seen.add(identity)
      out.push(kept)
    })
    return Value.Check(schema, out) ? out : fail(schema, out, field, problems)
  }
  return Value.Check(schema, value) ? value : fail(schema, value, field, problems)
}

/** Names the first error of `value` against `schema`, and reads as nothing. */
function fail(schema: TSchema, value: unknown, field: string, problems: ProblemSink): undefined {
  if (value === undefined) {
    problems.add(`${field} is required`)
    return undefined
  }
  const wanted = KINDS[String((schema as Shape).type)]
  if (wanted !== undefined && !wanted.is(value)) {
    problems.add(`${field} is ${kindOf(value)}, not ${wanted.name}`)
    return undefined
  }
  const error = Value.Errors(schema, value).First()
  const shown = quote(value)
  if (error === undefined) problems.add(`${field} ${shown} is invalid`)
  else if ((error.schema as { format?: unknown }).format === 'date-time') problems.add(`${field} ${shown} is not an RFC 3339 time`)
  else problems.add(commonSchemaMessage(error, field, shown) ?? invalidValueMessage(error, field, shown))
  return undefined
}

/** The JSON kinds a schema `type` asks for, as a problem names them. */
const KINDS: Record<string, { name: string; is: (value: unknown) => boolean }> = {
  object: { name: 'an object', is: isRecord },
  array: { name: 'a list', is: Array.isArray },
  string: { name: 'a string', is: (v) => typeof v === 'string' },
  integer: { name: 'an integer', is: (v) => typeof v === 'number' && Number.isInteger(v) },
  boolean: { name: 'true or false', is: (v) => typeof v === 'boolean' }
}

/** A value as a problem shows it: short, on one line. */
function quote(value: unknown): string {
  const text = value === undefined ? 'nothing' : (JSON.stringify(value) ?? typeof value)
  return text.length > 60 ? `${text.slice(0, 60)}…` : text
}
