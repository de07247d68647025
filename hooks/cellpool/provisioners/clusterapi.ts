/**
 * The Cluster API provisioner (docs/cellpool.md, "Cluster API cells"): per cell a Machine `<cell>` of
 * the pool's Cluster, the bootstrap Secret only when no bootstrap config template is named, and
 * no seed child: the KubeSwiftMachine and the bootstrap config the Machine references are made by
 * the workload agent from the pool's CellInfrastructure (clusterapi-children.ts), since Cluster
 * API refuses to take them over from another controller owner.
 *
 * The Machine is read as the cell's machine: its uid is the cell's incarnation (the Node's
 * instance label), its phase `Running` once Cluster API reports it provisioned; it has no device
 * list or addresses to wait for (`observes: provisioned`). Its CellNodeSet entry carries the
 * Machine's providerID, and the pool's own child is the CellInfrastructure, answered while the
 * pool lives and, in teardown, while any Machine is observed.
 */
import { MACHINE_TYPE_KEY } from '../../api/cellinfrastructure.ts'
import type { KubeObject } from '../../k8s/objects.ts'
import {
  answerCellInfrastructure,
  buildMachine,
  clusterApiHash,
  machineProvisioned,
  readCellInfrastructure,
  readMachine,
  withProviderID
} from './clusterapi-children.ts'
import type { CellProvisioner, GuestView } from '../model/provisioner.ts'

/** The observed Machine as the cell's machine. */
export function readMachineAsGuest(machine: KubeObject): GuestView {
  const view = readMachine(machine)
  const phase = machineProvisioned(view) ? 'Running' : view.phase
  const guest: GuestView = {
    name: view.name,
    uid: view.uid,
    phase,
    devices: [],
    hostNode: undefined,
    interfaces: [],
    primaryIP: undefined,
    conditions: view.notReady === undefined ? [] : [{ status: 'False', ...view.notReady }],
    deleting: view.deleting,
    templateHash: view.templateHash,
    observes: 'provisioned'
  }
  if (view.providerID !== undefined) guest.providerID = view.providerID
  return guest
}

/** The Cluster API provisioner. */
export const CLUSTER_API: CellProvisioner = {
  name: 'ClusterAPI',
  guest: { type: MACHINE_TYPE_KEY, kind: 'Machine', name: (cell) => cell },
  readGuest: (machine) => readMachineAsGuest(machine),
  buildSeed: () => undefined,
  needsSecret: (pool) => pool.clusterApi?.bootstrapTemplate === undefined,
  drainsDeletedGuest: true,
  buildGuest: (pool, id) => buildMachine(pool.clusterApi ?? { clusterName: '', version: '' }, id, clusterApiHash(pool)),
  templateHash: clusterApiHash,
  nodeEntry: withProviderID,
  poolChild: ({ observed, ...input }) =>
    answerCellInfrastructure({ ...input, observed: observed === undefined ? undefined : readCellInfrastructure(observed) })
}
