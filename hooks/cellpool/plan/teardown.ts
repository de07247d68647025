/**
 * Finalize hook of the GPUCellPool controller: ordered teardown (docs/cellpool.md, "finalize").
 *
 * `deletion.policy: Drain` (default) cordons every cell that was Ready and deletes its guest once
 * the cell is empty (the drain rule of scaling.ts), or once `drainTimeout` has passed since the
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
 *   (request.ts), so they go at once, and `finalized` waits for them too.
 */
import type { CellNode } from '../../api/cellnodeset.ts'
import type { ConditionInput } from '../../k8s/conditions.ts'
import type { KubeObject } from '../../k8s/objects.ts'
import { keepAsIs } from '../../metacontroller/keep.ts'
import { type CompositeResponse, asChildren } from '../../metacontroller/schemas.ts'
import { hasChildren, readCells } from '../cells/cell.ts'
import { buildCellNode, buildCellNodeSet } from '../build/children.ts'
import { phaseConfig } from '../cells/phases.ts'
import type { CellProvisioner, CellIdentity } from '../model/provisioner.ts'
import { readPool } from '../request/request.ts'
import { drainComplete } from '../cells/drain.ts'
import { resyncAfter, statusRow, viewStatus } from '../answer/status.ts'
import { apiTime } from '../../k8s/time.ts'
import { formatSeconds, parseTime } from '../time.ts'
import { workloadOf } from '../request/workload.ts'
import { witnessed } from '../cells/witness.ts'
import { resolvePool } from '../request/resolve.ts'
import { poolProblems } from '../rules/validate.ts'
import { otherProvisioner, provisionerOf } from '../provisioners/choose.ts'
import type { CellPoolSyncRequest } from '../model/request.ts'
import type { PoolView } from '../model/pool.ts'
import type { CellRow } from '../model/answer.ts'

/** The finalize hook. */
export function finalize(request: CellPoolSyncRequest, now: Date): CompositeResponse {
  const { provisioner, view } = teardownView(request)
  const pool = resolvePool(view.spec)
  const specValid = poolProblems(view.name, view.spec).length === 0
  const workload = workloadOf(view, now)
  const cells = readCells(view, workload, phaseConfig(pool), '', now)
  const deletedAt = parseTime(view.deletionTimestamp) ?? now.getTime()
  const timeoutAt = deletedAt + pool.deletion.drainTimeoutSeconds * 1000
  const timedOut = now.getTime() >= timeoutAt
  const force = pool.deletion.policy === 'Force'
  const deletionStamp = view.deletionTimestamp ?? now.toISOString()

  const strayGuests = view.strays.filter((o) => `${o.kind}.${o.apiVersion}` === provisioner.guest.type)
  const strayOthers = view.strays.filter((o) => !strayGuests.includes(o))
  const guestsObserved = cells.some((c) => c.observed?.guest !== undefined) || strayGuests.length > 0

  const children: KubeObject[] = []
  const nodes: CellNode[] = []
  const rows: CellRow[] = []
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
    if (phase === 'Draining') {
      draining += 1
      children.push(...[o.secret, o.seed, o.guest].filter((x): x is KubeObject => x !== undefined).map(keepAsIs))
    } else if (guestsObserved) {
      // Guests first: the seed profiles and Secrets wait until no guest is observed.
      children.push(...[o.secret, o.seed].filter((x): x is KubeObject => x !== undefined).map(keepAsIs))
    }
    const id: CellIdentity = { poolName: view.name, namespace: view.namespace, poolUID: view.uid, index: c.index }
    nodes.push(provisioner.nodeEntry(witnessed(buildCellNode(pool, id, o.guestView?.uid ?? '', wasReady), wasReady), o.guestView))
    const previousPhase = c.stored?.phase
    rows.push(
      statusRow(
        {
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
        },
        c
      )
    )
  }
  // The pool's own child (Cluster API: the agent releases each Machine the answer lets go, so the
  // CellInfrastructure stays while any Machine is observed).
  if (guestsObserved) {
    const machines = cells.map((c) => ({ index: c.index, machine: c.observed?.guest }))
    const common = { pool, poolName: view.name, namespace: view.namespace, poolUID: view.uid, observed: view.cellInfrastructure }
    const poolChild = provisioner.poolChild({ ...common, cells: machines, children })
    if (poolChild !== undefined) children.push(poolChild)
  }
  // The other provisioner's machines while this one's go (see teardownView): kept, drained later.
  children.push(...view.otherProvisioner.map(keepAsIs))
  if (guestsObserved) {
    children.push(...strayOthers.map(keepAsIs))
    if (view.cellNodeSet !== undefined) {
      children.push(
        specValid ? buildCellNodeSet(view.name, view.namespace, view.uid, pool, nodes, false) : keepAsIs(view.cellNodeSet.object)
      )
    }
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
  const status = viewStatus(view, workload, now, {
    rows,
    desired: 0,
    progressing,
    updated: { type: 'Updated', status: 'True', reason: 'Deleting', message: 'The pool is being deleted; nothing is updated any more.' },
    autoscale: undefined
  })
  const response: CompositeResponse = { children: asChildren(children), status, finalized: !observedAny }
  const resync = resyncAfter(deadlines, now)
  if (resync !== undefined) response.resyncAfterSeconds = resync
  return response
}

/**
 * The provisioner the teardown goes by, and the pool read with it: the one the spec names, unless
 * only the other one's machines are observed. That happens after a change of
 * `spec.cell.provisioner` that got past admission (sync then blocks the pool: blocking.ts); read
 * by the spec's provisioner, those machines would be left out of the answer and deleted undrained,
 * and a Cluster API Machine would wait at its deletion hooks with nothing to release it. When both
 * are observed, the spec's go first and the other's are kept until then.
 */
function teardownView(request: CellPoolSyncRequest): { provisioner: CellProvisioner; view: PoolView } {
  const named = provisionerOf(request.parent.spec)
  const view = readPool(request, named)
  const machines = [...view.cells.values()].some((o) => o.guest !== undefined || o.seed !== undefined)
  if (machines || view.otherProvisioner.length === 0) return { provisioner: named, view }
  const other = otherProvisioner(named)
  return { provisioner: other, view: readPool(request, other) }
}
