/**
 * What the pool's previous status remembers, read defensively: the status is the pool's own
 * record, but an old stored object can have any shape, so every field is checked and a row or a
 * number that fails its check reads as absent (docs/cellpool.md, "Witnesses", lists what each
 * memory does when the status handed to a sync is stale).
 */
import { Value } from '@sinclair/typebox/value'
import { CELL_PHASES, CellFailureSchema, type CellPhase } from '../../api/gpucellpool.ts'
import { asRecord, asText } from '../../k8s/objects.ts'
import type { DeviceShape } from '../model/autoscale.ts'
import type { PreviousStatus } from '../model/pool.ts'
import type { StoredRow } from '../model/cell.ts'

const rec = asRecord
const str = asText
const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) ? v : undefined)

function readPreviousRow(row: unknown): StoredRow | undefined {
  const r = rec(row)
  const name = str(r.name)
  const phase = r.phase
  if (name === undefined || typeof phase !== 'string' || !(CELL_PHASES as readonly string[]).includes(phase)) return undefined
  const failures = int(r.failureCount)
  const index = int(r.index)
  const failure = phase === 'Failed' && Value.Check(CellFailureSchema, r.failure) ? { failure: structuredClone(r.failure) } : {}
  return {
    name,
    index: index !== undefined && index >= 0 ? index : undefined,
    phase: phase as CellPhase,
    reason: str(r.reason) ?? '',
    message: str(r.message) ?? '',
    lastTransitionTime: str(r.lastTransitionTime),
    readyOnce: r.readyOnce === true,
    failureCount: failures !== undefined && failures > 0 ? failures : 0,
    guestUID: str(r.guestUID),
    templateHash: str(r.templateHash),
    ...failure
  }
}

/** The device shape the autoscaler recorded, when both its numbers are integers. */
function readDeviceShape(value: unknown): DeviceShape | undefined {
  const shape = rec(value)
  const memoryMiB = int(shape.memoryMiB)
  const cores = int(shape.cores)
  return memoryMiB !== undefined && cores !== undefined ? { memoryMiB, cores } : undefined
}

/** The demand the previous status recorded, when its counts are integers. */
function readPreviousDemand(value: unknown): PreviousStatus['demand'] {
  const demand = rec(value)
  const pendingPods = int(demand.pendingPods)
  const satisfiable = int(demand.satisfiable)
  const lastObserved = str(demand.lastObserved)
  if (pendingPods === undefined || satisfiable === undefined) return undefined
  return { pendingPods, satisfiable, ...(lastObserved !== undefined ? { lastObserved } : {}) }
}

/** The pool's previous status: what the hooks keep between syncs. */
export function readPrevious(status: unknown): PreviousStatus {
  const s = rec(status)
  const cells = new Map<string, StoredRow>()
  for (const r of Array.isArray(s.cells) ? s.cells : []) {
    const row = readPreviousRow(r)
    if (row !== undefined && !cells.has(row.name)) cells.set(row.name, row)
  }
  const desired = int(s.desiredReplicas)
  return {
    observedGeneration: int(s.observedGeneration),
    cells,
    conditions: s.conditions,
    desiredReplicas: desired !== undefined && desired >= 0 ? desired : undefined,
    cellDeviceShape: readDeviceShape(s.cellDeviceShape),
    lastScaleUpTime: str(s.lastScaleUpTime),
    lastScaleDownTime: str(s.lastScaleDownTime),
    demandFreeSince: str(s.demandFreeSince),
    demand: readPreviousDemand(s.demand)
  }
}
