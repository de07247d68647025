/**
 * The agent's record of what it wrote onto a Node, and which Node object under a cell's name is
 * the cell's (docs/workload.md, "The record"; docs/security.md, "The workload cluster").
 *
 * The record is a listed Node's status row's `applied`: the uid of the Node object, the instance
 * the agent adopted it for, and the keys, taints and cordon it set there. Only the agent writes a
 * CellNodeSet's status; a Node's own kubelet may write the Node's annotations and most of its
 * labels. So nothing a kubelet writes decides what the agent removes, or which Node counts as a
 * cell's: the instance label on a Node says nothing unless the record names that Node object.
 *
 * Without a record for a row the agent trusts a Node's instance label once, and only where no
 * record could exist yet: the CellNodeSet has no stored status at all (new, or recreated after a
 * deletion), or the stored row was written by a release before the record and already reported
 * this Node as this instance's. Such a record claims no key and no cordon: nothing the Node's
 * `cells.kubeswift.io/managed` annotation (where those releases kept their record) lists is ever
 * removed, and a cordon it lists is left for an admin to clear.
 */
import { INSTANCE_LABEL, MAX_UID_LENGTH, type Applied, type CellNodeStatus } from '../../../api/cellnodeset.ts'
import { NO_CLAIMS } from './ensure.ts'
import type { NodeView } from './node-view.ts'

/**
 * The record that applies to `view`: the stored row's, when it names this Node object; or, where
 * no record could exist yet (the module header), one for the instance the Node's label names,
 * claiming no key. Undefined when the agent has not adopted this Node object.
 */
export function priorRecord(view: NodeView, stored: CellNodeStatus | undefined, instance: string, hasStatus: boolean): Applied | undefined {
  if (stored?.applied !== undefined) return stored.applied.uid === view.uid ? stored.applied : undefined
  if (!recordable(view) || instance === '' || view.labels[INSTANCE_LABEL] !== instance) return undefined
  const reportedBefore = stored !== undefined && stored.present && stored.instance === instance
  if (hasStatus && !reportedBefore) return undefined
  return { uid: view.uid, instance, ...NO_CLAIMS }
}

/**
 * True when the record can name `view`: a Node without a uid, or with one longer than the
 * record's schema holds (only a server that is not a real API server sends either), is never
 * adopted, since a status the API server refuses would freeze the pool.
 */
export function recordable(view: NodeView): boolean {
  return view.uid !== '' && view.uid.length <= MAX_UID_LENGTH
}

/**
 * The instance a row reports: the Node's instance label when the record names this Node object
 * for that instance, else empty. The pool hook counts a cell's Node by this value, so a Node that
 * set the label on itself is never counted.
 */
export function vouchedInstance(view: NodeView, record: Applied | undefined): string {
  const label = view.labels[INSTANCE_LABEL]
  return record !== undefined && record.uid === view.uid && label === record.instance ? label : ''
}
