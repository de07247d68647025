/**
 * The largest GPUCellPool sync request the bounds allow (hooks/cellpool/model/limits.ts): a pool whose
 * desired size fills its CellNodeSet to the 192 KiB bound, a guestTemplate of 64 KiB, a join
 * template of 256 tokens that renders to 64 KiB per cell, and as many observed cells as fit in
 * the 16 MiB `BODY_LIMIT`, each stored as the API server and Metacontroller store it (the
 * last-applied record, managed fields, KubeSwift's status). Two Ready cells lost their bootstrap
 * Secret (the hook renders both again) and two new cells wait for their guests (the hook builds
 * both), and two more cells are prepared behind them (their seed profiles): the most an answer builds.
 */
import { cellName, CELLS_API_VERSION, type CellNode, type CellNodeStatus } from '../../hooks/api/cellnodeset.ts'
import { bootstrapValues, renderBootstrap } from '../../hooks/cellpool/build/bootstrap.ts'
import { buildBootstrapSecret, buildCellNode, buildCellNodeSet } from '../../hooks/cellpool/build/children.ts'
import { buildGuest, buildSeedProfile, templateHash } from '../../hooks/cellpool/provisioners/swift-guest.ts'
import {
  MAX_BOOTSTRAP_BYTES,
  MAX_GUEST_TEMPLATE_BYTES,
  MAX_NODE_SET_DESIRED_BYTES,
  WIDEST_CELL_INDEX
} from '../../hooks/cellpool/model/limits.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import { poolProblems } from '../../hooks/cellpool/rules/validate.ts'
import { DEFAULT_BODY_LIMIT } from '../../hooks/server/app.ts'
import { isRecord, type KubeObject } from '../../hooks/k8s/objects.ts'
import { objectKey, typeKey } from '../../hooks/metacontroller/observed.ts'
import { controllerObject } from './instance.ts'
import { applied, CREATED, STARTED, storedChild, uid, type Owner } from './stored.ts'
import type { CellIdentity } from '../../hooks/cellpool/model/provisioner.ts'
import { nodeSetBytes } from '../../hooks/cellpool/build/sizes.ts'
import type { CellPoolSyncRequest } from '../../hooks/cellpool/model/request.ts'

const NS = 'gpu-cells'
const POOL = 'a100-inference'
const POOL_UID = uid(7000)

/** A dozen labels, a few annotations and two taints: what a large real pool puts on its Nodes. */
function nodeSettings(): Record<string, unknown> {
  const labels: Record<string, string> = { 'node-role.kubernetes.io/gpu-cell': '', 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' }
  for (let i = 0; i < 10; i++) labels[`cells.example.com/feature-${i}`] = `enabled-${'x'.repeat(40)}`
  return {
    labels,
    annotations: {
      'example.com/owner': 'ml-platform@example.com',
      'example.com/runbook': `https://runbooks.example.com/gpu-cells/${'r'.repeat(200)}`,
      'example.com/cost-center': 'cc-4711'
    },
    taints: [
      { key: 'example.com/gpu-cell', value: 'true', effect: 'NoSchedule' },
      { key: 'nvidia.com/gpu', effect: 'NoSchedule' }
    ]
  }
}

/** A guestTemplate of just under 64 KiB: interfaces, disks and a network with many ports. */
function guestTemplate(): Record<string, unknown> {
  const template: Record<string, unknown> = {
    guestClassRef: { name: 'gpu-a100-x8' },
    imageRef: { name: 'ubuntu-24.04-nvidia-570' },
    interfaces: [{ name: 'primary' }, { name: 'routable', networkRef: { name: 'gpu-lan' } }],
    dataDiskRefs: [] as unknown[]
  }
  const disks = template.dataDiskRefs as unknown[]
  while (Buffer.byteLength(JSON.stringify(template)) < MAX_GUEST_TEMPLATE_BYTES - 200) {
    disks.push({ name: `scratch-${disks.length}`, imageRef: { name: `dataset-shard-${String(disks.length).padStart(5, '0')}` } })
  }
  disks.pop()
  return template
}

/** A join template of 256 tokens whose rendering for the widest cell is just under 64 KiB. */
function joinTemplate(values: Parameters<typeof renderBootstrap>[1]): string {
  const lines = [
    '#cloud-config',
    'runcmd:',
    '  - kubeadm join --node-name {{ nodeName }} --node-labels {{ nodeLabels }} --register-with-taints "{{ nodeTaints }}"',
    '  - ip -4 addr show {{ nodeIPInterface }}'
  ]
  for (let i = 0; i < 84; i++) lines.push(`  - echo {{ cellName }} {{ cellIndex }} {{ poolName }} # step ${i}`)
  const head = `${lines.join('\n')}\n`
  const rendered = renderBootstrap(head, values)
  const size = 'text' in rendered ? Buffer.byteLength(rendered.text) : 0
  return `${head}# ${'.'.repeat(MAX_BOOTSTRAP_BYTES - size - 16)}\n`
}

const owner: Owner = { apiVersion: CELLS_API_VERSION, kind: 'GPUCellPool', name: POOL, uid: POOL_UID }
const marks = { labels: { 'controller-uid': POOL_UID } }

/** The largest legal pool sync request at `now`, and what its answer must hold. */
export function largestPoolRequest(now: Date): { request: CellPoolSyncRequest; cells: number; replicas: number } {
  const spec: Record<string, unknown> = {
    replicas: 1,
    cell: {
      guestTemplate: guestTemplate(),
      gpu: { backend: 'DRA', dra: { resourceClaimTemplateName: 'single-vfio-gpu' } },
      nodeIPFrom: 'routable'
    },
    bootstrap: { joinSecretRef: { name: 'join' } },
    workloadCluster: { kubeconfigSecretRef: { name: 'workload' }, node: nodeSettings() }
  }
  const pool = resolvePool(spec)
  const { entry, total } = nodeSetBytes(POOL, pool, 0)
  const replicas = Math.floor((MAX_NODE_SET_DESIRED_BYTES - total) / entry)
  spec.replicas = replicas
  const problems = poolProblems(POOL, spec)
  if (problems.length > 0) throw new Error(`the largest pool is not legal: ${problems.map((p) => p.message).join('; ')}`)
  const resolved = resolvePool(spec)
  const template = joinTemplate(bootstrapValues(POOL, POOL_UID, resolved, WIDEST_CELL_INDEX))
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, 'Z')
  const id = (index: number): CellIdentity => ({ poolName: POOL, namespace: NS, poolUID: POOL_UID, index })
  const hash = templateHash(resolved)

  const children: KubeObject[] = []
  const rows: CellNodeStatus[] = []
  const previous: Record<string, unknown>[] = []
  const nodes: CellNode[] = []
  const guestUid = (index: number): string => uid(10000 + index)
  const addCell = (index: number, full: boolean, secret: boolean): void => {
    const name = cellName(POOL, index)
    const rendered = renderBootstrap(template, bootstrapValues(POOL, POOL_UID, resolved, index))
    if (!('text' in rendered)) throw new Error(rendered.problem)
    if (secret) children.push(storedChild(buildBootstrapSecret(id(index), rendered.text), owner, { seed: 20000 + index, marks }))
    children.push(storedChild(buildSeedProfile(id(index), resolved.hostname), owner, { seed: 30000 + index, marks }))
    if (!full) {
      nodes.push(buildCellNode(resolved, id(index), '', false))
      rows.push({ name, present: false })
      previous.push({
        name,
        index,
        phase: 'Pending',
        reason: 'GuestNotCreated',
        message: '',
        lastTransitionTime: stamp,
        templateHash: hash
      })
      return
    }
    const guest = storedChild(buildGuest(resolved, id(index)), owner, {
      seed: 40000 + index,
      marks,
      status: {
        phase: 'Running',
        gpu: { devices: [`0000:${(index % 256).toString(16).padStart(2, '0')}:00.0`], nodeName: `gpu-host-${index % 64}` },
        network: { primaryIP: `10.0.${index % 256}.2`, interfaces: [{ name: 'routable', ip: `10.20.${index % 256}.11` }] },
        conditions: [{ type: 'Ready', status: 'True', reason: 'Running', message: '', lastTransitionTime: STARTED }]
      },
      statusManager: 'kubeswift'
    })
    children.push({ ...guest, metadata: { ...guest.metadata, uid: guestUid(index) } })
    nodes.push(buildCellNode(resolved, id(index), guestUid(index), false))
    rows.push({
      name,
      present: true,
      instance: guestUid(index),
      poolUID: POOL_UID,
      live: true,
      ready: true,
      unschedulable: false,
      devices: [{ id: `GPU-${index}`, type: 'NVIDIA-A100-SXM4-80GB', memoryMiB: 81920, cores: 100, healthy: true }],
      registration: 'Parsed',
      allocations: { read: true, pods: 0, inFlight: false }
    })
    previous.push({
      name,
      index,
      phase: 'Ready',
      reason: 'Ready',
      message: 'The cell is Ready.',
      guestUID: guestUid(index),
      lastTransitionTime: CREATED,
      readyOnce: true,
      templateHash: hash
    })
  }

  // Fill the body limit, leaving room for the pool, the CellNodeSet and the two new cells.
  const room = DEFAULT_BODY_LIMIT - 2 * 1024 * 1024
  let cells = 0
  let bytes = 0
  while (cells < replicas - 2 && bytes < room) {
    const before = children.length
    addCell(cells++, true, true)
    for (const child of children.slice(before)) bytes += Buffer.byteLength(JSON.stringify(child))
  }
  // Two Ready cells whose bootstrap Secret was deleted by hand; two new cells waiting for their guests.
  const dropped = new Set(children.filter((c) => c.kind === 'Secret').slice(0, 2))
  children.splice(0, children.length, ...children.filter((c) => !dropped.has(c)))
  addCell(cells, false, true)
  addCell(cells + 1, false, true)

  const cellNodeSet = storedChild(buildCellNodeSet(POOL, NS, POOL_UID, resolved, nodes, false), owner, {
    seed: 7001,
    marks,
    status: {
      observedGeneration: 1,
      observedTime: stamp,
      conditions: [{ type: 'Reachable', status: 'True', reason: 'Reachable', message: 'ok', lastTransitionTime: CREATED }],
      nodeCount: cells,
      nodes: rows,
      // The agent's summary of the physical GPUs: none of KubeSwift's driver published, so no check.
      physicalGPUs: { observedTime: stamp, published: 0, ready: 0, held: 0, own: 0 }
    },
    statusManager: 'gpuhooks-workload-agent'
  })
  children.push({ ...cellNodeSet, metadata: { ...cellNodeSet.metadata, generation: 1 } })

  const parent = {
    ...applied(
      { apiVersion: CELLS_API_VERSION, kind: 'GPUCellPool', metadata: { name: POOL, namespace: NS, uid: POOL_UID, generation: 2 }, spec },
      7000
    ),
    status: { observedGeneration: 2, replicas: cells + 2, readyCells: cells, cells: previous }
  } as unknown as CellPoolSyncRequest['parent']
  const join = applied(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'join', namespace: NS },
      type: 'Opaque',
      data: { 'user-data': Buffer.from(template).toString('base64') }
    },
    7002
  )
  const map: Record<string, Record<string, KubeObject>> = {
    'Secret.v1': {},
    'SwiftSeedProfile.seed.kubeswift.io/v1alpha1': {},
    'SwiftGuest.swift.kubeswift.io/v1alpha1': {},
    'CellNodeSet.cells.kubeswift.io/v1alpha1': {}
  }
  for (const child of children) {
    const bucket = map[typeKey(String(child.apiVersion), String(child.kind))]
    if (bucket !== undefined) bucket[objectKey(String(child.metadata.name), child.metadata.namespace)] = child
  }
  const request = {
    controller: controllerObject('cellpool.yaml', 'CompositeController'),
    parent,
    children: map,
    related: { 'Secret.v1': { [objectKey('join', NS)]: join } },
    finalizing: false
  } as unknown as CellPoolSyncRequest
  return { request, cells, replicas }
}

/** The answer keeps every cell, renders the two missing Secrets and builds the two missing guests. */
export function checkLargestPool(cells: number): (answer: unknown) => string | undefined {
  return (answer) => {
    const children = isRecord(answer) && Array.isArray(answer.children) ? answer.children.filter(isRecord) : []
    const count = (kind: string): number => children.filter((c) => c.kind === kind).length
    const got = [count('Secret'), count('SwiftSeedProfile'), count('SwiftGuest'), count('CellNodeSet')]
    // The two cells queued behind the two new machines get their seed profiles (their Secrets in a later answer).
    const want = [cells + 2, cells + 4, cells + 2, 1]
    return JSON.stringify(got) === JSON.stringify(want)
      ? undefined
      : `expected Secrets, seed profiles, guests and CellNodeSets ${JSON.stringify(want)}, got ${JSON.stringify(got)}`
  }
}
