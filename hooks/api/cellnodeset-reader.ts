/**
 * The one reader of a stored CellNodeSet, for both sides of the contract (cellnodeset.ts): the
 * workload agent reads its spec and its own earlier status, the cellpool hook reads the status the
 * agent wrote. Both read through the schemas of cellnodeset.ts, so the CRD, the types and what
 * counts as readable never drift apart (style rule 3).
 *
 * A stored object can have any shape (an older agent wrote it, a person edited it, the schema
 * changed since), so nothing here throws, and reads are own-property reads only.
 *
 * - **spec**: all or nothing. A spec that fails its schema is not read at all (`spec` undefined),
 *   and every field that failed is named: acting on part of a request could delete the wrong Node.
 * - **status**: what passes is kept, what fails is dropped and named. An object whose required
 *   field fails is dropped whole (a row without `present` says nothing); an optional field that
 *   fails is dropped from its object; a list entry that fails is dropped from its list; of two
 *   entries of a list-map with the same key the first is kept. So one bad row costs that row,
 *   never the rest of the status.
 */
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { isRecord, ownValue, setOwn } from '../k8s/objects.ts'
import { commonSchemaMessage, invalidValueMessage, kindOf } from '../k8s/schema-messages.ts'
import {
  CellNodeSetSpecSchema,
  CellNodeSetStatusSchema,
  type CellNodeSetSpec,
  type CellNodeSetStatus,
  type CellNodeStatus
} from './cellnodeset.ts'

/** At most this many problems are named; the rest are counted. */
export const MAX_READ_PROBLEMS = 20

/** The metadata both readers use, each field only when it has its type. */
export interface CellNodeSetMetadata {
  name: string
  namespace?: string
  uid?: string
  resourceVersion?: string
  generation?: number
  deletionTimestamp?: string
  finalizers?: string[]
}

/** A stored CellNodeSet as read. */
export interface CellNodeSetRead {
  metadata: CellNodeSetMetadata
  /** The spec, when it passes its schema whole. */
  spec: CellNodeSetSpec | undefined
  /** What spec failed, one sentence per field (empty when `spec` is read). */
  specProblems: string[]
  /** The parts of the stored status that pass the schema; `{}` when none is stored. */
  status: CellNodeSetStatus
  /** The stored status is an object with at least one field: the agent has served the CellNodeSet. */
  hasStatus: boolean
  /** What of the stored status was dropped, one sentence per field. */
  statusProblems: string[]
  /** `status.nodes` by Node name. */
  rows: ReadonlyMap<string, CellNodeStatus>
  /** The status's `Reachable` condition, when it has a readable one. */
  reachable: NonNullable<CellNodeSetStatus['conditions']>[number] | undefined
}

/** Reads `object`; a string says why it is not a CellNodeSet at all (no metadata, or no name). */
export function readCellNodeSet(object: unknown): CellNodeSetRead | string {
  if (!isRecord(object) || !isRecord(object.metadata)) return 'not an object with metadata'
  const metadata = readMetadata(object.metadata)
  if (metadata === undefined) return 'metadata.name is required'

  const specProblems = new Problems()
  const spec = keepValid(CellNodeSetSpecSchema, ownValue(object, 'spec'), 'spec', specProblems)
  const statusProblems = new Problems()
  const stored = ownValue(object, 'status')
  const status =
    stored === undefined || stored === null
      ? {}
      : ((keepValid(CellNodeSetStatusSchema, stored, 'status', statusProblems) as CellNodeSetStatus | undefined) ?? {})
  const rows = new Map((status.nodes ?? []).map((row) => [row.name, row]))
  return {
    metadata,
    spec: specProblems.list.length === 0 ? (spec as CellNodeSetSpec) : undefined,
    specProblems: specProblems.sentences(),
    status,
    hasStatus: isRecord(stored) && Object.keys(stored).length > 0,
    statusProblems: statusProblems.sentences(),
    rows,
    reachable: status.conditions?.find((c) => c.type === 'Reachable')
  }
}

function readMetadata(metadata: Record<string, unknown>): CellNodeSetMetadata | undefined {
  const text = (key: string): string | undefined => {
    const value = ownValue(metadata, key)
    return typeof value === 'string' ? value : undefined
  }
  const name = text('name')
  if (name === undefined || name === '') return undefined
  const out: CellNodeSetMetadata = { name }
  for (const key of ['namespace', 'uid', 'resourceVersion', 'deletionTimestamp'] as const) {
    const value = text(key)
    if (value !== undefined) out[key] = value
  }
  const generation = ownValue(metadata, 'generation')
  if (typeof generation === 'number' && Number.isInteger(generation)) out.generation = generation
  const finalizers = ownValue(metadata, 'finalizers')
  if (Array.isArray(finalizers)) out.finalizers = finalizers.filter((f): f is string => typeof f === 'string')
  return out
}

/** Problem sentences, the first MAX_READ_PROBLEMS of them named. */
class Problems {
  readonly list: string[] = []

  add(sentence: string): void {
    this.list.push(sentence)
  }

  sentences(): string[] {
    if (this.list.length <= MAX_READ_PROBLEMS) return [...this.list]
    return [...this.list.slice(0, MAX_READ_PROBLEMS), `and ${this.list.length - MAX_READ_PROBLEMS} more`]
  }
}

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
function keepValid(schema: TSchema, value: unknown, field: string, problems: Problems): unknown {
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
function fail(schema: TSchema, value: unknown, field: string, problems: Problems): undefined {
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
