/**
 * Witnesses among the children (docs/cellpool.md, "Witnesses"): what the cellpool hooks must not
 * forget when Metacontroller hands a sync a pool older than its last status write.
 *
 * Metacontroller takes the parent from its informer cache and replaces the whole status with each
 * answer (docs/metacontroller.md rule 9), and it applies an answer's children before it writes the
 * answer's status (and writes the status even when applying a child failed, so an entry can also
 * lag the status: a witness then says less than the status, which is safe because witnesses only
 * add to it or restart a drain). So a sync can start from a pool whose status predates the
 * children it sees; a memory kept only in the status is then lost for one sync, and whatever that
 * sync answers becomes the status again. The witnesses are the pool's CellNodeSet entries
 * (`spec.nodes[]`), which only the hook writes: the ValidatingAdmissionPolicy of
 * metacontroller/cellnodeset-policy.yaml lets no one but Metacontroller write that spec, and the
 * agent writes only the status. A field of the
 * machine (an annotation on the SwiftGuest) would do as well against a stale pool, but any
 * namespace editor may write it, and it would be a second record per provisioner.
 *
 * Every witness only adds to what the status remembers, and counts only for the machine it names
 * (the entry's `instance` equal to the observed machine's uid), so a forged or stale entry (a spec
 * written without the policy installed, an entry copied from an earlier machine) can at worst
 * delay: a cell taken for once Ready is drained rather than removed, and never fails by a budget;
 * a cell taken for draining returns to service in the same sync unless the pool really has one
 * cell too many. No witness makes the hook delete a machine or skip a drain it would otherwise do.
 *
 * - `readyOnce: true`: this machine was Ready once (phases stop failing it; a scale-down drains it).
 * - `cordon: true`: the last answer drained this machine (or removed it after a drain); the drain
 *   goes on, its 30 s counted again from now.
 * - `cordon: false` where the status says Draining: the last answer returned the cell to service,
 *   so a drain that starts again starts now, not when the earlier one did (which would cut the
 *   30 s a cordon must stand before a drain may complete).
 *
 * The autoscaler's memory needs no record of its own: a cell being created is a scale-up in
 * flight (its time the creation of its bootstrap Secret), and a cell draining or deleted is a
 * scale-down in flight (plan/autoscale.ts), both read off the children.
 */
import type { CellNode } from '../../api/cellnodeset.ts'
import type { CellPhase } from '../../api/gpucellpool.ts'
import type { Cell, CellWitness } from '../model/cell.ts'
import { sortedRecord } from '../../k8s/objects.ts'
import type { GuestView } from '../model/provisioner.ts'

/** No witness: no entry, or one of another machine. */
export const NO_WITNESS: CellWitness = Object.freeze({ named: false, readyOnce: false, cordon: false })

/** The witness of an entry for `guest`: nothing unless the entry names this machine. */
export function witnessOf(entry: CellNode | undefined, guest: GuestView | undefined): CellWitness {
  if (entry === undefined || guest === undefined || guest.uid === '' || entry.instance !== guest.uid) return NO_WITNESS
  return { named: true, readyOnce: entry.readyOnce === true, cordon: entry.cordon === true }
}

/** The entry `node` with the witness of a machine once Ready; only an entry that names a machine carries one. */
export function witnessed(node: CellNode, readyOnce: boolean): CellNode {
  if (!readyOnce || node.instance === undefined || node.instance === '') return node
  return sortedRecord({ ...node, readyOnce: true })
}

/**
 * The cell drains by its entry alone: the entry still asks for the cordon the last answer wrote for
 * this machine, once Ready, while the previous status shows no drain or removal (it predates them).
 */
export function drainWitnessed(c: Pick<Cell, 'witness' | 'seen' | 'previous' | 'children' | 'guestDeleting'>): boolean {
  const prev = c.previous?.phase
  return (
    c.witness.cordon &&
    c.seen.readyOnce &&
    c.children.guest &&
    !c.guestDeleting &&
    c.seen.phase !== 'Failed' &&
    prev !== 'Draining' &&
    prev !== 'Deleting'
  )
}

/** The phase a cell shows before scaling decides: Draining when only its entry remembers the drain. */
export function leavingOrSeen(c: Parameters<typeof drainWitnessed>[0]): CellPhase {
  return drainWitnessed(c) ? 'Draining' : c.seen.phase
}

/** The previous status's drain predates a return to service the entry witnesses: a new drain starts now. */
export function drainRestarts(c: Pick<Cell, 'witness'>): boolean {
  return c.witness.named && !c.witness.cordon
}
