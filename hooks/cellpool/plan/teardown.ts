/**
 * The teardown of a pool, the finalize hook's plan: ordered teardown (docs/cellpool.md, "finalize").
 *
 * `deletion.policy: Drain` (default) cordons every cell that was Ready and deletes its guest once
 * the cell is empty (the drain rule of cells/drain.ts), or once `drainTimeout` has passed since the
 * pool's `deletionTimestamp`; a cell that never became Ready goes at once. While the workload
 * cluster is unobserved, only the timeout decides. `Force` deletes every guest at once.
 * Guests first; once none is observed, the seed profiles, Secrets and the CellNodeSet (whose
 * deletion lets the agent sweep the pool's remaining Nodes). `finalized: true` only when no child
 * is observed.
 *
 * Choices where the spec is silent:
 * - A drain in teardown also waits 30 s, measured from the pool's deletion (HAMi's scheduler
 *   annotates a Pod before binding it), and the timeout is the same `drainTimeout`.
 * - An invalid spec does not hold the teardown up: the defaults stand in for what cannot be read,
 *   and the CellNodeSet is kept as it is rather than rebuilt from a spec that cannot be read.
 * - Children that belong to no cell but carry a name the pool gives (strays) go with the first
 *   wave if they are guests, else with the second; children of other names are never answered
 *   (request/request.ts), so they go at once, and `finalized` waits for them too.
 */
import type { ConditionInput } from '../../k8s/conditions.ts'
import { apiTime, formatSeconds, parseTime } from '../../k8s/time.ts'
import { hasChildren } from '../cells/cell.ts'
import { drainComplete } from '../cells/drain.ts'
import type { AnswerPlan, CellOutcome } from '../model/answer.ts'
import type { Cell } from '../model/cell.ts'
import type { PoolView } from '../model/pool.ts'
import type { CellProvisioner } from '../model/provisioner.ts'
import type { CellPoolSyncRequest } from '../model/request.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'
import type { WorkloadState } from '../model/workload.ts'
import { otherProvisioner, provisionerOf } from '../provisioners/choose.ts'
import { readPool } from '../request/request.ts'
import { poolProblems } from '../rules/validate.ts'

/** What the teardown decides from: the pool read by the provisioner it goes by (teardownView). */
export interface TeardownInput {
  view: PoolView
  pool: ResolvedPool
  provisioner: CellProvisioner
  cells: readonly Cell[]
  workload: WorkloadState
  now: Date
  /** The Node keys the admin permits (hooks/metacontroller/descriptor.ts, HookContext). */
  permittedNodeKeys?: readonly string[]
}

/** The teardown's answer (see the header). */
export function teardownPlan(input: TeardownInput): AnswerPlan {
  const { view, pool, provisioner, cells, workload, now } = input
  const specValid = poolProblems(view.name, view.spec, input.permittedNodeKeys).length === 0
  const deletedAt = parseTime(view.deletionTimestamp) ?? now.getTime()
  const timeoutAt = deletedAt + pool.deletion.drainTimeoutSeconds * 1000
  const timedOut = now.getTime() >= timeoutAt
  const force = pool.deletion.policy === 'Force'
  const deletionStamp = view.deletionTimestamp ?? now.toISOString()

  const strayGuests = view.strays.filter((o) => `${o.kind}.${o.apiVersion}` === provisioner.guest.type)
  const strayOthers = view.strays.filter((o) => !strayGuests.includes(o))
  const guestsObserved = cells.some((c) => c.observed?.guest !== undefined) || strayGuests.length > 0

  const outcomes: CellOutcome[] = []
  const deadlines: Array<Date | undefined> = []
  let draining = 0
  for (const c of cells) {
    const o = c.observed
    if (o === undefined || !hasChildren(c)) continue
    const wasReady = c.seen.readyOnce
    let phase: 'Draining' | 'Deleting' = 'Deleting'
    let message =
      o.guest !== undefined
        ? `The pool is being deleted: deleting guest ${c.name}.`
        : 'The pool is being deleted: deleting the seed profile and bootstrap Secret.'
    if (o.guest !== undefined && wasReady && !force && !timedOut) {
      const check = drainComplete(c.ownRow, workload, deletionStamp, now)
      if (!check.done) {
        phase = 'Draining'
        message = `The pool is being deleted: draining until ${check.waiting}, at most until drainTimeout (${formatSeconds(pool.deletion.drainTimeoutSeconds)}) after the deletion.`
        deadlines.push(check.deadline, new Date(timeoutAt))
      }
    }
    if (phase === 'Draining') draining += 1
    const previousPhase = c.stored?.phase
    outcomes.push({
      index: c.index,
      cell: c,
      // Guests first: the seed profiles and Secrets wait until no guest is observed.
      answer: phase === 'Draining' ? 'hold' : guestsObserved ? 'withoutGuest' : 'none',
      createGuest: false,
      entry: { cordon: wasReady, readyOnce: wasReady },
      row: {
        index: c.index,
        name: c.name,
        phase,
        reason: 'PoolDeleting',
        message,
        lastTransitionTime:
          previousPhase === phase && c.stored?.lastTransitionTime !== undefined ? c.stored.lastTransitionTime : apiTime(now),
        readyOnce: wasReady,
        failureCount: c.stored?.failureCount ?? 0,
        building: false,
        templateHash: c.templateHash
      }
    })
  }
  const observedAny =
    cells.some((c) => c.observed !== undefined) ||
    view.cellNodeSet !== undefined ||
    view.cellInfrastructure !== undefined ||
    view.strays.length > 0 ||
    view.otherProvisioner.length > 0 ||
    view.foreign.length > 0
  const progressing: ConditionInput = guestsObserved
    ? {
        type: 'Progressing',
        status: 'True',
        reason: 'Deleting',
        message:
          draining > 0
            ? `The pool is being deleted: ${draining} cell(s) drain first (deletion.policy ${pool.deletion.policy}).`
            : 'The pool is being deleted: deleting the guests.'
      }
    : {
        type: 'Progressing',
        status: 'True',
        reason: 'Deleting',
        message: observedAny
          ? 'The pool is being deleted: the guests are gone; deleting the seed profiles, Secrets and the CellNodeSet.'
          : 'The pool is being deleted: every child is gone.'
      }
  return {
    cells: outcomes,
    // The CellNodeSet goes with the second wave; a spec that cannot be read keeps it as it is.
    nodeSet: !guestsObserved || view.cellNodeSet === undefined ? 'none' : specValid ? { demand: false } : 'keep',
    // Cluster API: the agent releases each Machine the answer lets go, so the CellInfrastructure
    // stays while any Machine is observed.
    poolChild: guestsObserved ? 'answer' : 'none',
    // The other provisioner's machines while this one's go (see teardownView): kept, drained later.
    kept: [...view.otherProvisioner, ...(guestsObserved ? strayOthers : [])],
    status: {
      desired: 0,
      progressing,
      updated: { type: 'Updated', status: 'True', reason: 'Deleting', message: 'The pool is being deleted; nothing is updated any more.' },
      autoscale: undefined
    },
    deadlines,
    finalized: !observedAny
  }
}

/**
 * The provisioner the teardown goes by, and the pool read with it: the one the spec names, unless
 * only the other one's machines are observed. That happens after a change of
 * `spec.cell.provisioner` that got past admission (sync then blocks the pool: plan/blocking.ts); read
 * by the spec's provisioner, those machines would be left out of the answer and deleted undrained,
 * and a Cluster API Machine would wait at its deletion hooks with nothing to release it. When both
 * are observed, the spec's go first and the other's are kept until then.
 */
export function teardownView(request: CellPoolSyncRequest): { provisioner: CellProvisioner; view: PoolView } {
  const named = provisionerOf(request.parent.spec)
  const view = readPool(request, named)
  const machines = [...view.cells.values()].some((o) => o.guest !== undefined || o.seed !== undefined)
  if (machines || view.otherProvisioner.length === 0) return { provisioner: named, view }
  const other = otherProvisioner(named)
  return { provisioner: other, view: readPool(request, other) }
}
