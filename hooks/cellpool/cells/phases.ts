/**
 * A cell's phase (docs/cellpool.md, "Phases"): what observation gives (observed-phase.ts) with the
 * cell's history applied: a Failed cell stays Failed, a cell once Ready regresses and never times
 * out, and before the first Ready each phase has its budget. The removal phases (`Draining`,
 * `Deleting`) are decided by the scaling module; this one says what the cell is, not what is done
 * with it.
 *
 * Choices where the spec is silent:
 * - A stopped clock restarts: while the workload cluster is unobserved a waiting cell's reason is
 *   `WorkloadUnobserved` and its transition time is stamped when the pause begins and again when
 *   it ends, so after an agent outage the phase gets its whole budget again. The status keeps one
 *   time per cell; an outage never fails a cell, which is what the rule is for.
 * - A cell queued for a machine (`MachineQueued`: prepared while others' machines are created)
 *   has no budget; its transition time is stamped when its machine is created.
 */
import type { CellNodeStatus } from '../../api/cellnodeset.ts'
import { CELL_PHASES, type CellFailure, type CellPhase } from '../../api/gpucellpool.ts'
import type { CellPhaseResult, PhaseConfig, PreviousCell } from '../model/cell.ts'
import { observedPhase, UNOBSERVED_REASON } from './observed-phase.ts'
import type { GuestView } from '../model/provisioner.ts'
import { apiTime, formatSeconds, parseTime } from '../../k8s/time.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'
import type { WorkloadState } from '../model/workload.ts'

/** The budgets and expectations phases need, from the resolved spec. */
export function phaseConfig(pool: ResolvedPool): PhaseConfig {
  return {
    bootstrapReadyTimeoutSeconds: pool.bootstrapReadyTimeoutSeconds,
    capacityReadyTimeoutSeconds: pool.capacity.readyTimeoutSeconds,
    expectedDevices: pool.capacity.expectedDevicesPerCell,
    nodeIPFrom: pool.nodeIPFrom === '' ? undefined : pool.nodeIPFrom
  }
}

/** Phases a cell passes while it is built, before its first Ready ("creating"). */
export const CREATING_PHASES: ReadonlySet<CellPhase> = new Set([
  'Pending',
  'AllocatingGPU',
  'GuestProvisioning',
  'Booting',
  'Joining',
  'AwaitingGPUCapacity'
])

/** Phases under `bootstrap.readyTimeout`. */
const BOOTSTRAP_PHASES: ReadonlySet<CellPhase> = new Set(['Pending', 'AllocatingGPU', 'GuestProvisioning', 'Booting', 'Joining'])

/** Reason of a phase shown by a cell that was Ready before. */
export const REGRESSED_REASON = 'Regressed'

/**
 * Reason of a prepared cell (its Secret, seed and CellNodeSet entry made, no Node of its name)
 * waiting for one of the machines being created to turn Ready (plan/scaling.ts `orderCreation`).
 */
export const QUEUED_REASON = 'MachineQueued'

/**
 * The phase of a cell of the current build: observation, then its history (docs/cellpool.md
 * "Phases"): a Failed cell stays Failed; a cell that was Ready and now shows an earlier phase is
 * `Regressed` and never times out; before the first Ready each phase has its budget, measured
 * from the cell's `lastTransitionTime`, and outliving it fails the cell.
 *
 * `previous` must be the same build's state (the caller drops it when the guest was replaced).
 */
export function cellPhase(input: {
  guest: GuestView | undefined
  row: CellNodeStatus | undefined
  workload: WorkloadState
  config: PhaseConfig
  previous: PreviousCell | undefined
  now: Date
}): CellPhaseResult {
  const { previous, now, config } = input
  const nowStamp = apiTime(now)
  if (previous?.phase === 'Failed') {
    const lastTransitionTime = previous.lastTransitionTime ?? nowStamp
    // A row written before failures were kept as data has only its message, which is kept as the failure's.
    const failure = previous.failure ?? { reason: previous.reason, since: lastTransitionTime, message: previous.message }
    return {
      phase: 'Failed',
      reason: previous.reason,
      message: failure.message,
      readyOnce: previous.readyOnce,
      lastTransitionTime,
      failedNow: false,
      failure
    }
  }
  const previousPhase = previous !== undefined && CELL_PHASES.includes(previous.phase) ? previous.phase : undefined
  const seen = observedPhase({ ...input, previousPhase })
  const readyOnce = (previous?.readyOnce ?? false) || seen.phase === 'Ready'
  const wasPaused = previous?.reason === UNOBSERVED_REASON
  const kept =
    previous !== undefined && previous.phase === seen.phase && wasPaused === seen.paused && previous.lastTransitionTime !== undefined
  const lastTransitionTime = kept ? (previous.lastTransitionTime as string) : nowStamp
  const base = { phase: seen.phase, reason: seen.reason, message: seen.message, readyOnce, lastTransitionTime, failedNow: false }
  const withIP = seen.nodeIP !== undefined ? { ...base, nodeIP: seen.nodeIP } : base
  if (seen.phase === 'Ready') return withIP
  if (previous?.readyOnce === true) {
    return { ...withIP, reason: REGRESSED_REASON, message: `The cell was Ready and regressed: ${seen.message}` }
  }
  // A queued cell is not being built yet: its budget starts when its machine is created.
  const queued = previous?.reason === QUEUED_REASON && input.guest === undefined
  if (seen.paused || queued) return withIP
  const bootstrap = BOOTSTRAP_PHASES.has(seen.phase)
  const budget = bootstrap ? config.bootstrapReadyTimeoutSeconds : config.capacityReadyTimeoutSeconds
  const since = parseTime(lastTransitionTime) ?? now.getTime()
  const deadline = new Date(since + budget * 1000)
  if (now.getTime() >= deadline.getTime()) {
    const field = bootstrap ? 'bootstrap.readyTimeout' : 'capacity.readyTimeout'
    const failure: CellFailure = {
      reason: bootstrap ? 'ReadyTimeout' : 'CapacityTimeout',
      phase: seen.phase,
      since: nowStamp,
      message: `The cell stayed ${seen.phase} longer than ${field} (${formatSeconds(budget)}): ${seen.message}`
    }
    return {
      ...withIP,
      phase: 'Failed',
      reason: failure.reason,
      message: failure.message,
      lastTransitionTime: nowStamp,
      failedNow: true,
      failure
    }
  }
  return { ...withIP, deadline }
}
