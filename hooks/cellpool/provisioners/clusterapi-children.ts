/**
 * The children of a Cluster API cell pool, one builder each (docs/cellpool.md, "Cluster API cells"):
 * per cell a Machine, and per pool a CellInfrastructure whose entries say what the workload agent
 * makes for each Machine (its KubeSwiftMachine and, with a template, its bootstrap config); and
 * the reader of an observed Machine.
 *
 * The Machine carries the pool's deletion hooks from creation, so that a Machine deleted by
 * anyone never evicts a Pod before the pool has drained the cell, and never what Cluster API
 * writes into a Machine itself (`spec.providerID`, `spec.bootstrap.dataSecretName` with a
 * template, the cluster-name label, its finalizer): Metacontroller's 3-way merge then leaves
 * those alone.
 *
 * Choices where gpucellpool is silent:
 * - `networkRef` is the first guestTemplate interface's network and `nodeNetworkRef` the
 *   second's (gpucellpool: the primary and the first secondary), each only when set.
 * - The KubeSwiftMachine and the bootstrap config carry the cell labels and the cluster-name
 *   label (bootstrap providers find their Cluster by it), the KubeSwiftMachine also the template
 *   hash.
 */
import { CELLS_API_VERSION, POOL_LABEL, POOL_UID_LABEL, cellName, type CellNode } from '../../api/cellnodeset.ts'
import {
  BOOTSTRAP_GROUP,
  CLUSTER_API_VERSION,
  INFRASTRUCTURE_GROUP,
  KUBESWIFT_MACHINE_KIND,
  MACHINE_HOOK_OWNER,
  PRE_DRAIN_HOOK,
  PRE_TERMINATE_HOOK,
  CellMachineSchema,
  isBootstrapConfigKind,
  type CellMachine
} from '../../api/cellinfrastructure.ts'
import { Value } from '@sinclair/typebox/value'
import { contentHash, sortKeysDeep } from '../../k8s/hash.ts'
import { MAX_REASON_CHARS, clipText, nameWithin } from '../../k8s/clip.ts'
import { asRecord, asText, isRecord, type KubeObject } from '../../k8s/objects.ts'
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../k8s/labels.ts'
import { byCellIndex, childLabels, gpuClaim } from '../build/children.ts'
import { bootstrapSecretName } from '../request/cell-names.ts'
import { TEMPLATE_HASH_ANNOTATION } from '../../api/gpucellpool.ts'
import { configKindOf } from '../request/resolve.ts'
import type { ResolvedClusterApi, ResolvedPool } from '../model/resolved-pool.ts'
import type { CellIdentity, PoolChildInput } from '../model/provisioner.ts'

/** The label by which Cluster API and its providers find an object's Cluster. */
export const CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name'

/** An observed Machine, read defensively. */
export interface MachineView {
  name: string
  uid: string
  /** Cluster API's `status.phase`: Pending, Provisioning, Provisioned, Running, Deleting, Deleted, Failed, Unknown. */
  phase: string | undefined
  /** `spec.providerID`, which Cluster API copies from the KubeSwiftMachine. */
  providerID: string | undefined
  /** `status.nodeRef.name`. */
  nodeName: string | undefined
  deleting: boolean
  templateHash: string | undefined
  /** The first condition that is not True, for a cell's reason and message. */
  notReady: { type: string; reason?: string; message?: string } | undefined
}

/**
 * The Machine's fields the hooks read; a field of the wrong shape counts as absent. Condition
 * text is clipped and a node name past 253 characters is not read (k8s/clip.ts): whoever writes
 * the Machine's status could make either a megabyte, copied once per cell into the pool status.
 */
export function readMachine(machine: KubeObject): MachineView {
  const status = asRecord(machine.status)
  const annotations = asRecord(machine.metadata.annotations)
  const hash = Object.hasOwn(annotations, TEMPLATE_HASH_ANNOTATION) ? asText(annotations[TEMPLATE_HASH_ANNOTATION]) : undefined
  const conditions = Array.isArray(status.conditions) ? status.conditions.filter(isRecord) : []
  const first = conditions.find((c) => c.status !== 'True' && typeof c.type === 'string')
  const notReady =
    first === undefined
      ? undefined
      : {
          type: clipText(String(first.type), MAX_REASON_CHARS),
          ...(asText(first.reason) !== undefined ? { reason: clipText(String(first.reason), MAX_REASON_CHARS) } : {}),
          ...(asText(first.message) !== undefined ? { message: clipText(String(first.message)) } : {})
        }
  return {
    name: machine.metadata.name ?? '',
    uid: asText(machine.metadata.uid) ?? '',
    phase: asText(status.phase),
    providerID: asText(asRecord(machine.spec).providerID),
    nodeName: nameWithin(asText(asRecord(status.nodeRef).name)),
    deleting: asText(machine.metadata.deletionTimestamp) !== undefined,
    templateHash: hash,
    notReady
  }
}

/** Whether Cluster API reports the Machine's infrastructure provisioned (the VM runs). */
export function machineProvisioned(view: MachineView): boolean {
  return view.phase === 'Provisioned' || view.phase === 'Running' || view.phase === 'Updating'
}

/** The cell's Machine `<cell>`: its Cluster, version, bootstrap, KubeSwiftMachine, and the pool's two deletion hooks. */
export function buildMachine(capi: ResolvedClusterApi, id: CellIdentity, hash: string): KubeObject {
  const cell = cellName(id.poolName, id.index)
  const template = capi.bootstrapTemplate
  const bootstrap =
    template === undefined
      ? { dataSecretName: bootstrapSecretName(cell) }
      : { configRef: { apiGroup: template.apiGroup, kind: configKindOf(template.kind), name: cell } }
  const spec: Record<string, unknown> = {
    bootstrap,
    clusterName: capi.clusterName,
    infrastructureRef: { apiGroup: INFRASTRUCTURE_GROUP, kind: KUBESWIFT_MACHINE_KIND, name: cell }
  }
  if (capi.version !== '') spec.version = capi.version
  return {
    apiVersion: CLUSTER_API_VERSION,
    kind: 'Machine',
    metadata: {
      name: cell,
      namespace: id.namespace,
      labels: childLabels(id),
      annotations: sortKeysDeep({
        [PRE_DRAIN_HOOK]: MACHINE_HOOK_OWNER,
        [PRE_TERMINATE_HOOK]: MACHINE_HOOK_OWNER,
        [TEMPLATE_HASH_ANNOTATION]: hash
      })
    },
    spec: sortKeysDeep(spec)
  }
}

/** The KubeSwiftMachine spec of a cell: KubeSwift's SwiftGuest backend with the guest's image, class, networks and GPU. */
export function kubeSwiftMachineSpec(pool: ResolvedPool): Record<string, unknown> {
  const template = pool.guestTemplate
  const guest: Record<string, unknown> = {}
  for (const field of ['imageRef', 'guestClassRef'] as const) if (isRecord(template[field])) guest[field] = structuredClone(template[field])
  const interfaces = Array.isArray(template.interfaces) ? template.interfaces : []
  const network = (i: number): unknown => asRecord(interfaces[i]).networkRef
  if (isRecord(network(0))) guest.networkRef = structuredClone(network(0))
  if (isRecord(network(1))) guest.nodeNetworkRef = structuredClone(network(1))
  if (pool.gpu.backend === 'Native' && pool.gpu.native !== undefined) {
    guest.gpu = { gpuProfileRef: { name: pool.gpu.native.profile } }
  } else if (pool.gpu.dra !== undefined) {
    guest.gpu = gpuClaim(pool.gpu.dra)
  }
  return { backend: { swiftGuest: sortKeysDeep(guest), type: 'SwiftGuest' } }
}

/** The CellInfrastructure entry of a cell: what the agent makes for its Machine, and whether the pool lets the Machine go. */
export function buildCellMachine(
  pool: ResolvedPool,
  capi: ResolvedClusterApi,
  id: CellIdentity,
  hash: string,
  release: boolean
): CellMachine {
  const cell = cellName(id.poolName, id.index)
  const objectLabels = sortKeysDeep({ ...childLabels(id), [CLUSTER_NAME_LABEL]: capi.clusterName })
  const entry: CellMachine = {
    name: cell,
    kubeSwiftMachine: { labels: objectLabels, annotations: { [TEMPLATE_HASH_ANNOTATION]: hash }, spec: kubeSwiftMachineSpec(pool) }
  }
  const template = capi.bootstrapTemplate
  const kind = configKindOf(template?.kind ?? '')
  // Admission and the sync's own check refuse another group or kind (clusterapi-rules.ts).
  if (template !== undefined && template.apiGroup === BOOTSTRAP_GROUP && isBootstrapConfigKind(kind)) {
    entry.bootstrapConfig = { apiGroup: BOOTSTRAP_GROUP, kind, labels: objectLabels, templateName: template.name }
  }
  if (release) entry.release = true
  return entry
}

/** The pool's CellInfrastructure, named after it: one entry per Machine, in index order. */
export function buildCellInfrastructure(
  poolName: string,
  namespace: string,
  poolUID: string,
  machines: readonly CellMachine[]
): KubeObject {
  const sorted = [...machines].sort(byCellIndex)
  return {
    apiVersion: CELLS_API_VERSION,
    kind: 'CellInfrastructure',
    metadata: {
      name: poolName,
      namespace,
      labels: sortKeysDeep({ [POOL_LABEL]: poolName, [POOL_UID_LABEL]: poolUID, [MANAGED_BY_LABEL]: MANAGED_BY })
    },
    spec: { ...(sorted.length > 0 ? { machines: sorted.map((m) => structuredClone(m)) } : {}), poolUID }
  }
}

/** A Cluster API cell's CellNodeSet entry: the SwiftGuest one, with the Machine's providerID by which the agent knows its Node. */
export function withProviderID(node: CellNode, machine: { providerID?: string | undefined } | undefined): CellNode {
  return machine?.providerID === undefined ? node : sortKeysDeep({ ...node, providerID: machine.providerID })
}

/** The pool's observed CellInfrastructure: the object and its entries that read as entries, by Machine name. */
export interface CellInfrastructureView {
  object: KubeObject
  machines: Map<string, CellMachine>
}

/** Reads an observed CellInfrastructure; an entry of the wrong shape is left out (and rebuilt if its Machine is answered). */
export function readCellInfrastructure(object: KubeObject): CellInfrastructureView {
  const machines = new Map<string, CellMachine>()
  const list = asRecord(object.spec).machines
  for (const entry of Array.isArray(list) ? list : []) {
    if (Value.Check(CellMachineSchema, entry) && !machines.has(entry.name)) machines.set(entry.name, structuredClone(entry))
  }
  return { object, machines }
}

/** The cells of one answer as the CellInfrastructure needs them. */
export type InfrastructureCells = Omit<PoolChildInput, 'observed'> & { observed: CellInfrastructureView | undefined }

/**
 * The pool's CellInfrastructure for one answer: an entry for every Machine the answer carries
 * (as observed when it has one: what a Machine was built with does not change) and, with
 * `release: true` and its uid, for every observed Machine the answer lets go, until it is no
 * longer observed.
 */
export function answerCellInfrastructure(input: InfrastructureCells): KubeObject {
  const answered = new Set(input.children.filter((o) => o.kind === 'Machine').map((o) => o.metadata.name ?? ''))
  const capi = input.pool.clusterApi ?? { clusterName: '', version: '' }
  const entries: CellMachine[] = []
  for (const cell of input.cells) {
    const name = cellName(input.poolName, cell.index)
    const inAnswer = answered.has(name)
    if (!inAnswer && cell.machine === undefined) continue
    const id: CellIdentity = { poolName: input.poolName, namespace: input.namespace, poolUID: input.poolUID, index: cell.index }
    const hash = cell.machine !== undefined ? (readMachine(cell.machine).templateHash ?? '') : clusterApiHash(input.pool)
    // An observed entry of another hash was written for an earlier Machine of this name (the
    // observed CellInfrastructure can lag behind the Machine): this one's is built anew.
    const observed = cell.machine !== undefined ? input.observed?.machines.get(name) : undefined
    const kept = observed?.kubeSwiftMachine.annotations?.[TEMPLATE_HASH_ANNOTATION] === hash ? observed : undefined
    const entry = kept ?? buildCellMachine(input.pool, capi, id, hash, false)
    delete entry.release
    delete entry.machineUID
    if (!inAnswer && cell.machine !== undefined) {
      // The release names its Machine: a Machine rebuilt under this name must keep its hooks even
      // where the agent still reads this entry (a cached copy older than the new Machine).
      entry.release = true
      const uid = readMachine(cell.machine).uid
      if (uid !== '') entry.machineUID = uid
    }
    entries.push(sortKeysDeep(entry))
  }
  return buildCellInfrastructure(input.poolName, input.namespace, input.poolUID, entries)
}

/** What a Cluster API cell is built from: the guest fields a KubeSwiftMachine takes, the GPU and the Cluster API settings. */
export function clusterApiHash(pool: ResolvedPool): string {
  return contentHash({ guestTemplate: pool.guestTemplate, gpu: pool.gpu, clusterApi: pool.clusterApi ?? null })
}
