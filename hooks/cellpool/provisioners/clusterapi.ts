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
import { PROVIDER_ID_MAX } from '../../api/cellnodeset.ts'
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

/**
 * The observed Machine as the cell's machine. Its `spec.providerID` goes into the CellNodeSet,
 * whose schema takes at most {@link PROVIDER_ID_MAX} characters: a longer one is not copied (a
 * CellNodeSet that fails its schema is never written, so every cell would wait), and pushed to
 * `problems` instead; the agent then cannot match the cell's Node by it.
 */
export function readMachineAsGuest(machine: KubeObject, problems: string[] = []): GuestView {
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
  if (view.providerID !== undefined && view.providerID.length <= PROVIDER_ID_MAX) guest.providerID = view.providerID
  else if (view.providerID !== undefined)
    problems.push(
      `Machine ${view.name}: spec.providerID is ${view.providerID.length} characters, past the ${PROVIDER_ID_MAX} a CellNodeSet entry takes; not copied`
    )
  return guest
}

/** The Cluster API provisioner. */
export const CLUSTER_API: CellProvisioner = {
  name: 'ClusterAPI',
  guest: { type: MACHINE_TYPE_KEY, kind: 'Machine', name: (cell) => cell },
  readGuest: (machine, problems) => readMachineAsGuest(machine, problems),
  buildSeed: () => undefined,
  needsSecret: (pool) => pool.clusterApi?.bootstrapTemplate === undefined,
  drainsDeletedGuest: true,
  buildGuest: (pool, id) => buildMachine(pool.clusterApi ?? { clusterName: '', version: '' }, id, clusterApiHash(pool)),
  templateHash: clusterApiHash,
  nodeEntry: withProviderID,
  poolChild: ({ observed, ...input }) =>
    answerCellInfrastructure({ ...input, observed: observed === undefined ? undefined : readCellInfrastructure(observed) })
}
