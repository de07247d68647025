/**
 * The cell pool's world as the cluster scenarios and the bench play it against a real API server:
 * a pool manifest built on the unit fixtures' valid spec, the namespace with its join Secret,
 * KubeSwift booting guests, and the kubelets and workload agent reporting a CellNodeSet's status
 * (where a scenario does not run the real agent).
 */
import { poolSpec } from '../../unit/fixtures/cellpool.ts'
import { summarizePhysicalGpus } from '../../../hooks/agent/nodeset/physical-gpus.ts'
import { isObject, type Json, type JsonObject } from '../../support/merge.ts'
import type { TestCluster } from './cluster.ts'
import type { KubeClient, ResourceRef } from './kube.ts'
import { reader } from './reads.ts'

export const CELLS = 'cells.kubeswift.io/v1alpha1'

/** The join template of the scenarios' join Secret: kubeadm-style, with the tokens the controller fills in. */
export const JOIN_TEMPLATE = '#cloud-config\nruncmd:\n  - kubeadm join --node-name {{ nodeName }} --node-labels {{ nodeLabels }}\n'

/** Autoscaling between one and two cells with no stabilization windows: a scenario sees each decision in its next round. */
export const AUTOSCALING_ONE_TO_TWO: JsonObject = {
  autoscaling: {
    enabled: true,
    minReplicas: 1,
    maxReplicas: 2,
    stabilizationWindow: '0s',
    scaleDown: 'Auto',
    scaleDownStabilizationWindow: '0s'
  }
}

/** `patch` applied to `target` as a JSON merge patch (RFC 7386): objects merge, null removes a field, anything else replaces. */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch)
  const out: JsonObject = isObject(target) ? structuredClone(target) : {}
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key]
    else out[key] = mergePatch(out[key], value)
  }
  return out
}

/** A valid pool spec (tests/unit/fixtures/cellpool.ts) with `patch` merged in. */
export function poolSpecWith(patch: JsonObject = {}): JsonObject {
  const merged = mergePatch(poolSpec() as JsonObject, patch)
  if (!isObject(merged)) throw new Error('a pool spec patch must be an object')
  return merged
}

/**
 * The `workloadCluster` of a scenario pool `pool`: its Nodes join through the Secret
 * `wl-kubeconfig`, labelled (the role label is one a kubelet may not set on itself: only the agent
 * puts it there), annotated and tainted.
 */
export function scenarioWorkloadCluster(pool: string): JsonObject {
  return {
    kubeconfigSecretRef: { name: 'wl-kubeconfig' },
    node: {
      labels: { 'gpu.pool': pool, 'node-role.kubernetes.io/gpu-cell': '' },
      annotations: { 'example.com/owner': 'ml-team' },
      taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }]
    }
  }
}

/** A GPUCellPool manifest named `name` in `namespace` whose spec is {@link poolSpecWith}(`patch`). */
export function poolManifest(name: string, namespace: string, patch: JsonObject = {}): JsonObject {
  return { apiVersion: CELLS, kind: 'GPUCellPool', metadata: { name, namespace }, spec: poolSpecWith(patch) }
}

/**
 * Creates `namespace`, waits for its default ServiceAccount (Pods and guests need it) and creates
 * the pool's join Secret `join` there.
 */
export async function preparePoolNamespace(cluster: TestCluster, namespace: string): Promise<void> {
  await cluster.kubectl(['create', 'namespace', namespace])
  await cluster.kubectl(['wait', '--for=create', '-n', namespace, 'serviceaccount/default', '--timeout=60s'])
  await cluster.kubectl(['create', 'secret', 'generic', 'join', '-n', namespace, `--from-literal=user-data=${JOIN_TEMPLATE}`])
}

export const guestsRef = (namespace: string): ResourceRef => ({
  apiVersion: 'swift.kubeswift.io/v1alpha1',
  resource: 'swiftguests',
  namespace
})
export const cellNodeSetRef = (namespace: string, name: string): ResourceRef => ({
  apiVersion: CELLS,
  resource: 'cellnodesets',
  namespace,
  name
})

/**
 * The agent's record of what it wrote onto Node `cell` (docs/workload.md, "The record"): the
 * `applied` of its row in the CellNodeSet `pool`, read with `must`; undefined without one.
 */
export async function appliedOf(
  must: (ref: ResourceRef) => Promise<JsonObject>,
  namespace: string,
  pool: string,
  cell: string
): Promise<JsonObject | undefined> {
  const status = (await must(cellNodeSetRef(namespace, pool))).status
  const rows = isObject(status) && Array.isArray(status.nodes) ? status.nodes.filter(isObject) : []
  const applied = rows.find((r) => r.name === cell)?.applied
  return isObject(applied) ? applied : undefined
}

/** A status row as compared with {@link presentRow}: without the agent's record, which each scenario checks on its own. */
export function withoutRecord(row: JsonObject | undefined): JsonObject | undefined {
  if (row === undefined) return undefined
  const { applied: _applied, ...rest } = row
  return rest
}

const str = (v: Json | undefined): string => (typeof v === 'string' ? v : '')
const obj = (v: Json | undefined): JsonObject => (isObject(v) ? v : {})

/**
 * The status KubeSwift writes once a guest's VM runs: its GPU bound on a host of its own, Running,
 * and addresses of its own (cell `<pool>-<index>` gets host `gpu-host-<index>`).
 */
export function runningGuestStatus(guestName: string): JsonObject {
  const index = Number(/-(\d+)$/.exec(guestName)?.[1] ?? 0)
  const host = `${Math.floor(index / 250)}.${(index % 250) + 2}`
  return {
    phase: 'Running',
    gpu: { devices: ['0000:3b:00.0'], nodeName: `gpu-host-${index}` },
    network: {
      primaryIP: `10.0.${host}`,
      interfaces: [
        { name: 'primary', ip: `10.0.${host}` },
        { name: 'routable', ip: `10.20.${host}` }
      ]
    }
  }
}

/** The guests of `namespace`. */
export async function listGuests(kube: KubeClient, namespace: string): Promise<JsonObject[]> {
  return (await kube.list(guestsRef(namespace))).body
}

/** KubeSwift's part: every guest of `namespace` without a status boots ({@link runningGuestStatus}). */
export async function bootGuests(kube: KubeClient, namespace: string): Promise<void> {
  for (const guest of await listGuests(kube, namespace)) {
    if (guest.status !== undefined) continue
    const name = str(obj(guest.metadata).name)
    await kube.updateStatus({ ...guestsRef(namespace), name }, { ...guest, status: runningGuestStatus(name) })
  }
}

/**
 * The row the workload agent reports for a cell whose Node is there, live and Ready, with the one
 * A100 HAMi registered (tests/cluster/support/agent.ts) and `pods` GPU Pods allocated on it.
 */
export function presentRow(
  name: string,
  instance: string,
  poolUID: string,
  options: { pods?: number; unschedulable?: boolean } = {}
): JsonObject {
  return {
    name,
    present: true,
    instance,
    poolUID,
    live: true,
    ready: true,
    unschedulable: options.unschedulable ?? false,
    devices: [{ id: 'GPU-0', type: 'NVIDIA-A100', memoryMiB: 81920, cores: 100, healthy: true }],
    registration: 'Parsed',
    allocations: { read: true, pods: options.pods ?? 0, inFlight: false }
  }
}

/** Pending GPU Pods as the workload agent reports them in a CellNodeSet's status. */
export type Demand = {
  read: boolean
  pendingPods: number
  shapes: Array<{ devices: number; memoryMiB: number; cores: number; pods: number }>
}

/**
 * The workload cluster and its agent, played without either: each running guest's kubelet
 * registers a Node (one healthy A100, as HAMi registers it), a VM that is gone stops and its Node
 * is swept, and the agent's pass writes a pool's CellNodeSet status from those Nodes.
 */
export class PlayedWorkload {
  /** The workload cluster's Nodes by name: the guest uid that registered it and the GPU Pods it holds. */
  readonly nodes = new Map<string, { instance: string; pods: number }>()
  /** Pending GPU Pods the agent reports, by pool. */
  readonly demand = new Map<string, Demand>()

  constructor(
    private readonly kube: KubeClient,
    private readonly namespace: string
  ) {}

  /** The kubelets, then the agent's pass for pool `pool` (nothing is written when it has no CellNodeSet). */
  async agentPass(pool: string): Promise<void> {
    const guests = await listGuests(this.kube, this.namespace)
    for (const guest of guests) {
      const { name, uid } = obj(guest.metadata)
      if (obj(guest.status).phase === 'Running' && this.nodes.get(str(name))?.instance !== str(uid))
        this.nodes.set(str(name), { instance: str(uid), pods: 0 })
    }
    for (const [name, node] of [...this.nodes]) if (!guests.some((g) => obj(g.metadata).uid === node.instance)) this.nodes.delete(name)

    const ref = cellNodeSetRef(this.namespace, pool)
    const cns = await reader(this.kube).get(ref)
    if (cns === undefined) return
    const spec = obj(cns.spec)
    const entries = Array.isArray(spec.nodes) ? spec.nodes.filter(isObject) : []
    cns.status = {
      observedGeneration: obj(cns.metadata).generation ?? 0,
      observedTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      conditions: [{ type: 'Reachable', status: 'True', reason: 'Reachable', message: 'ok', lastTransitionTime: '2026-01-01T00:00:00Z' }],
      nodeCount: this.nodes.size,
      nodes: entries.map((entry) => this.row(entry, str(spec.poolUID))),
      ...(spec.demand !== undefined
        ? { demand: structuredClone(this.demand.get(pool) ?? { read: true, pendingPods: 0, shapes: [] }) }
        : {}),
      ...(await this.physicalGpus(spec.physicalGPUs))
    }
    await this.kube.updateStatus(ref, cns)
  }

  /**
   * The agent's summary of the physical GPUs a DRA pool asks for (`spec.physicalGPUs`): the
   * agent's own counting (hooks/agent/nodeset/physical-gpus.ts) over the cluster's real
   * ResourceSlices and ResourceClaims, listed as its informers hold them.
   */
  private async physicalGpus(wanted: Json | undefined): Promise<JsonObject> {
    if (!isObject(wanted) || typeof wanted.driver !== 'string') return {}
    const dra = 'resource.k8s.io/v1'
    const slices = (await this.kube.list({ apiVersion: dra, resource: 'resourceslices' })).body
    const claims = (await this.kube.list({ apiVersion: dra, resource: 'resourceclaims' })).body
    const claimName = typeof wanted.claimName === 'string' ? { claimName: wanted.claimName } : {}
    const counts = summarizePhysicalGpus(slices, claims, { driver: wanted.driver, ...claimName }, this.namespace)
    return { physicalGPUs: { observedTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), ...counts } }
  }

  /** The agent's row for a spec entry: absent, or present with the Node's instance and Pods. */
  private row(entry: JsonObject, poolUID: string): JsonObject {
    const name = str(entry.name)
    const node = this.nodes.get(name)
    if (node === undefined) return { name, present: false }
    const unschedulable = entry.cordon === true && entry.instance === node.instance
    return presentRow(name, node.instance, poolUID, { pods: node.pods, unschedulable })
  }
}
