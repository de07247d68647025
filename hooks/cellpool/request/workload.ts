/**
 * What the workload side tells about a pool: the observed/unobserved rule (docs/cellpool.md, "The
 * workload cluster, seen through one child"). The workload cluster is observed when the
 * CellNodeSet's status has `Reachable=True` and an `observedTime` less than 2 minutes before now;
 * while it is unobserved nothing is deleted, no cell is created and no phase clock runs.
 */
import type { PoolView } from '../model/pool.ts'
import type { WorkloadState } from '../model/workload.ts'
import { parseTime } from '../../k8s/time.ts'

/** The workload cluster's window: an `observedTime` older than this is stale. */
export const OBSERVED_WITHIN_SECONDS = 120

/**
 * The observed/unobserved rule: the workload cluster is observed when the CellNodeSet's status has
 * `Reachable=True` and an `observedTime` less than 2 minutes before `now`.
 */
export function workloadState(input: {
  hasStatus: boolean
  reachable: { status: string; reason?: string; message?: string } | undefined
  observedTime: string | undefined
  observedGeneration: number | undefined
  generation: number | undefined
  now: Date
}): WorkloadState {
  const generationMatched =
    input.observedGeneration !== undefined && input.generation !== undefined && input.observedGeneration === input.generation
  if (!input.hasStatus) {
    return {
      observed: false,
      generationMatched,
      reason: 'NotObserved',
      message: 'The CellNodeSet has no status: the workload agent is not running or has not served it yet.'
    }
  }
  if (input.reachable?.status !== 'True') {
    const reason = input.reachable?.reason ?? 'NotObserved'
    const message = input.reachable?.message ?? 'The CellNodeSet status has no Reachable condition.'
    return { observed: false, generationMatched, reason, message }
  }
  const at = parseTime(input.observedTime)
  if (at === undefined || input.now.getTime() - at >= OBSERVED_WITHIN_SECONDS * 1000) {
    return {
      observed: false,
      generationMatched,
      reason: 'Stale',
      message: `The workload agent's last observation (${input.observedTime ?? 'none'}) is more than ${OBSERVED_WITHIN_SECONDS / 60} minutes old.`
    }
  }
  return {
    observed: true,
    generationMatched,
    reason: 'Reachable',
    message: input.reachable.message ?? 'The workload agent observes the workload cluster.'
  }
}

/** The workload cluster's state from the pool's observed CellNodeSet. */
export function workloadOf(view: PoolView, now: Date): WorkloadState {
  const cns = view.cellNodeSet
  return workloadState({
    hasStatus: cns?.hasStatus ?? false,
    reachable: cns?.reachable,
    observedTime: cns?.observedTime,
    observedGeneration: cns?.observedGeneration,
    generation: cns?.generation,
    now
  })
}
