/**
 * What a cell provisioner gives the pool (docs/cellpool.md, "Provisioners"): the kinds of a cell's own
 * children besides its bootstrap Secret, how they are built, and how the machine's status reads.
 *
 * Everything else about a cell is the same whatever makes its machine: its name and index, the
 * bootstrap Secret, its phase from the machine view and its CellNodeSet row, scaling, drain and
 * the status. So the hooks call a provisioner only through this interface, and a second
 * provisioner (a Cluster API Machine) is a second implementation of it, not a second pool.
 *
 * A cell's children have three roles, created in this order and removed in the reverse one:
 * - `secret`: the bootstrap Secret `<cell>-bootstrap` (build/children.ts), for every provisioner;
 * - `seed`: what the machine refers to and must exist before it (SwiftGuest: the SwiftSeedProfile);
 * - `guest`: the machine itself, whose uid is the cell's incarnation and the instance its Node
 *   carries (SwiftGuest: the SwiftGuest `<cell>`).
 */
import type { CellNode } from '../../api/cellnodeset.ts'
import type { KubeObject } from '../../k8s/objects.ts'
import type { ResolvedPool } from './resolved-pool.ts'

/** Which cell of which pool a builder makes a child for. */
export interface CellIdentity {
  poolName: string
  namespace: string
  poolUID: string
  index: number
}

/** A condition of the machine's status. */
export interface GuestCondition {
  type: string
  status: string
  reason?: string
  message?: string
}

/** What the hook read of a cell's observed machine (read defensively: it may have any shape). */
export interface GuestView {
  name: string
  uid: string
  /** `status.phase`: Pending, Scheduling, Running, Stopped, Failed (anything else as given). */
  phase: string | undefined
  /** The GPUs bound to the machine, each as a string. */
  devices: string[]
  /** The infrastructure node running the VM. */
  hostNode: string | undefined
  /** The machine's network interfaces with a name. */
  interfaces: ReadonlyArray<{ name: string; ip?: string }>
  primaryIP: string | undefined
  conditions: readonly GuestCondition[]
  /** The machine carries a deletion timestamp. */
  deleting: boolean
  /** The template hash it was built from (its `cells.kubeswift.io/template-hash` annotation). */
  templateHash: string | undefined
  /**
   * `provisioned`: the machine reports only whether it is provisioned (a Cluster API Machine: its
   * `phase` is Running once provisioned, and it has no device list or addresses to wait for).
   */
  observes?: 'provisioned'
  /** The provider's id of the machine, by which the agent knows its Node (Cluster API). */
  providerID?: string
}

/** One kind of cell child: its request type key (`Kind.apiVersion`), its kind and its name. */
export interface CellChildKind {
  type: string
  kind: string
  /** The child's name for the cell named `cell`. */
  name: (cell: string) => string
}

/** A cell provisioner (see the header). */
export interface CellProvisioner {
  /** Its `spec.cell.provisioner` value. */
  readonly name: string
  /** The child the machine refers to, created before it; none for a Cluster API Machine. */
  readonly seed?: CellChildKind
  /** The machine. */
  readonly guest: CellChildKind
  /** The observed machine read defensively; what cannot be read is pushed to `problems`. */
  readGuest(guest: KubeObject, problems: string[]): GuestView
  /** The cell's seed child (when the provisioner has one). */
  buildSeed(pool: ResolvedPool, id: CellIdentity): KubeObject | undefined
  /** Whether a cell of `pool` has a bootstrap Secret rendered from the join template. */
  needsSecret(pool: ResolvedPool): boolean
  /** A machine someone deleted waits for the pool's drain (Cluster API's deletion hooks hold it). */
  readonly drainsDeletedGuest: boolean
  /** The cell's machine, annotated with {@link CellProvisioner.templateHash}. */
  buildGuest(pool: ResolvedPool, id: CellIdentity): KubeObject
  /** The hash of what a cell is built from: a cell whose machine carries another one is outdated. */
  templateHash(pool: ResolvedPool): string
  /**
   * A cell's CellNodeSet entry as this provisioner's machine needs it: the entry every cell gets,
   * plus what the agent knows the machine's Node by besides its name (Cluster API: the Machine's
   * providerID).
   */
  nodeEntry(entry: CellNode, guest: GuestView | undefined): CellNode
  /**
   * The pool's own child besides the CellNodeSet, when the provisioner has one (Cluster API: the
   * CellInfrastructure, whose entries the agent turns into each Machine's KubeSwiftMachine), for an
   * answer carrying `input.children`; undefined when it has none.
   */
  poolChild(input: PoolChildInput): KubeObject | undefined
}

/** What the per-pool child of an answer is built from (see {@link CellProvisioner.poolChild}). */
export interface PoolChildInput {
  pool: ResolvedPool
  poolName: string
  namespace: string
  poolUID: string
  /** Index and observed machine (if any) of every cell of the answer. */
  cells: ReadonlyArray<{ index: number; machine: KubeObject | undefined }>
  /** The answer's children so far. */
  children: readonly KubeObject[]
  /** The per-pool child as observed (model/pool.ts `cellInfrastructure`). */
  observed: KubeObject | undefined
}
