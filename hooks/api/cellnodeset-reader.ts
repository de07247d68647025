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
 * - **status**: what passes is kept, what fails is dropped and named (schema-reader.ts): one bad
 *   row costs that row, never the rest of the status.
 */
import { isRecord, ownValue } from '../k8s/objects.ts'
import {
  CellNodeSetSpecSchema,
  CellNodeSetStatusSchema,
  type CellNodeSetSpec,
  type CellNodeSetStatus,
  type CellNodeStatus
} from './cellnodeset.ts'
import { keepValid, type ProblemSink } from './schema-reader.ts'

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
class Problems implements ProblemSink {
  readonly list: string[] = []

  add(sentence: string): void {
    this.list.push(sentence)
  }

  sentences(): string[] {
    if (this.list.length <= MAX_READ_PROBLEMS) return [...this.list]
    return [...this.list.slice(0, MAX_READ_PROBLEMS), `and ${this.list.length - MAX_READ_PROBLEMS} more`]
  }
}
