/**
 * What the agent exports per cell pool (docs/observability.md, "Metrics"): a pure reading of the
 * GPUCellPool's status, as the cell pool hook wrote it, and of its CellNodeSet's status, as this
 * pass observed it. The hook service is stateless and runs several replicas, so the per-pool
 * gauges live in the one agent that leads; it reads the pool every pass anyway (the owner check).
 *
 * The pool object comes from the API server and may have any shape (an old stored object, a
 * hand-edited status): a field of the wrong kind is left out, never guessed, and nothing here
 * throws. A figure the status does not hold (no desiredReplicas yet, demand not read) has no
 * value, so its series is absent rather than zero.
 */
import type { CellNodeSetStatus } from '../../../api/cellnodeset.ts'
import { parseDuration } from '../../../api/duration.ts'
import { CELL_PHASES, type CellPhase } from '../../../api/gpucellpool.ts'
import { isRecord, ownValue } from '../../../k8s/objects.ts'

/** The drain timeout a pool without `spec.deletion.drainTimeout` has (the CRD's default). */
export const DEFAULT_DRAIN_TIMEOUT = '10m'
const MIB = 1024 * 1024

/** The gauges of one pool. */
export interface PoolGauges {
  /** Cells by phase, every phase present (0 when none), so an emptied phase reads 0. */
  cells: Record<CellPhase, number>
  /** `status.desiredReplicas`: the size the pool is heading for. */
  desired?: number
  /** 1 when the pool has stopped rebuilding failed cells (ReplacementExhausted), else 0. */
  replacementExhausted: number
  /** Cells in phase Draining, with the Unix time (seconds) they entered it. */
  draining: { cell: string; sinceSeconds: number }[]
  /** `spec.deletion.drainTimeout` in seconds (default 10m). */
  drainTimeoutSeconds?: number
  /** `status.demand`: pending GPU Pods that could run on a pool Node, and those one cell could run. */
  demand?: { pendingPods: number; satisfiable: number }
  /** Pods holding a HAMi allocation on the pool's Nodes, where the agent could list them. */
  gpuPods?: number
  /** Healthy devices, and their memory, on the pool's Nodes that take new Pods (present, Ready, not cordoned, no conflict). */
  capacity: { devices: number; memoryBytes: number }
}

/** A whole number at least 0, or undefined. */
function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

function isPhase(value: unknown): value is CellPhase {
  return typeof value === 'string' && (CELL_PHASES as readonly string[]).includes(value)
}

/** The gauges of `pool`, with `status` the CellNodeSet's status after this pass. */
export function poolGauges(pool: unknown, status: CellNodeSetStatus | undefined): PoolGauges {
  const spec = ownValue(pool, 'spec')
  const poolStatus = ownValue(pool, 'status')
  const rows = list(ownValue(poolStatus, 'cells')).filter(isRecord)

  const cells = Object.fromEntries(CELL_PHASES.map((p) => [p, 0])) as Record<CellPhase, number>
  const draining: PoolGauges['draining'] = []
  let exhausted = false
  for (const row of rows) {
    const phase = ownValue(row, 'phase')
    if (!isPhase(phase)) continue
    cells[phase]++
    if (phase === 'Failed' && ownValue(row, 'reason') === 'ReplacementExhausted') exhausted = true
    const name = ownValue(row, 'name')
    const since = ownValue(row, 'lastTransitionTime')
    const ms = typeof since === 'string' ? Date.parse(since) : Number.NaN
    if (phase === 'Draining' && typeof name === 'string' && Number.isFinite(ms)) draining.push({ cell: name, sinceSeconds: ms / 1000 })
  }
  for (const condition of list(ownValue(poolStatus, 'conditions'))) {
    if (ownValue(condition, 'type') === 'Progressing' && ownValue(condition, 'reason') === 'ReplacementExhausted') exhausted = true
  }

  const gauges: PoolGauges = {
    cells,
    replacementExhausted: exhausted ? 1 : 0,
    draining: draining.sort((a, b) => (a.cell < b.cell ? -1 : a.cell > b.cell ? 1 : 0)),
    capacity: { devices: 0, memoryBytes: 0 }
  }
  const desired = count(ownValue(poolStatus, 'desiredReplicas'))
  if (desired !== undefined) gauges.desired = desired
  const timeout = ownValue(ownValue(spec, 'deletion'), 'drainTimeout') ?? DEFAULT_DRAIN_TIMEOUT
  const timeoutSeconds = typeof timeout === 'string' ? parseDuration(timeout) : undefined
  if (timeoutSeconds !== undefined) gauges.drainTimeoutSeconds = timeoutSeconds
  const demand = ownValue(poolStatus, 'demand')
  const pendingPods = count(ownValue(demand, 'pendingPods'))
  const satisfiable = count(ownValue(demand, 'satisfiable'))
  if (pendingPods !== undefined && satisfiable !== undefined) gauges.demand = { pendingPods, satisfiable }

  let read = false
  let gpuPods = 0
  for (const node of status?.nodes ?? []) {
    if (!node.present || node.conflict === true) continue
    if (node.allocations?.read === true) {
      read = true
      gpuPods += node.allocations.pods
    }
    if (node.ready !== true || node.unschedulable === true) continue
    for (const device of node.devices ?? []) {
      if (!device.healthy) continue
      gauges.capacity.devices++
      gauges.capacity.memoryBytes += device.memoryMiB * MIB
    }
  }
  if (read) gauges.gpuPods = gpuPods
  return gauges
}
