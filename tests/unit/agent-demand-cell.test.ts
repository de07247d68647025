/**
 * Demand counts only Pods one cell of the pool could run (docs/workload.md, "demand"): the cell's
 * size is read off the pool's Ready Nodes (cell-size.ts), and a Pod asking for more CPU, memory,
 * devices, device memory or compute than that is reported in `unrunnablePods`, not counted.
 * Every expectation is written out.
 */
import t from 'tap'
import { observedCellSize, fitsCell } from '../../hooks/agent/nodeset/demand/cell-size.ts'
import { decide } from '../../hooks/agent/nodeset/decide/core.ts'
import type { CellNodeSetInput, ObservedNode } from '../../hooks/agent/model/observed.ts'
import { podCompute, readDemand } from '../../hooks/agent/nodeset/demand/demand.ts'
import type { CellSize } from '../../hooks/api/cellnodeset.ts'

const POOL_UID = 'uid-pool'
const NOW = new Date('2026-05-01T00:00:00Z')
const SPEC = { resources: ['nvidia.com/gpu', 'nvidia.com/gpumem', 'nvidia.com/gpucores'] }
const GIB = 2 ** 30
/** An A100-80GB as HAMi registers it. */
const A100 = { id: 'GPU-0', type: 'NVIDIA-A100', devmem: 81920, devcore: 100, health: true }

/** A Node of the workload cluster: by default the pool's, Ready, 8 CPUs, 32 GiB, one healthy A100. */
function node(
  o: { name?: string; uid?: string; ready?: boolean; cpu?: string; memory?: string; devices?: unknown[] | undefined } = {}
): unknown {
  const devices = Object.hasOwn(o, 'devices') ? o.devices : [A100]
  return {
    metadata: {
      name: o.name ?? 'pool-0',
      labels: { 'cells.kubeswift.io/pool-uid': o.uid ?? POOL_UID },
      annotations: devices === undefined ? {} : { 'hami.io/node-nvidia-register': JSON.stringify(devices) }
    },
    status: {
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
      allocatable: { cpu: o.cpu ?? '8', memory: o.memory ?? '32Gi' }
    }
  }
}
const LISTED = new Set(['pool-0', 'pool-1', 'pool-2'])
const CELL: CellSize = { cpuMillicores: 8000, memoryBytes: 32 * GIB, devices: 1, deviceMemoryMiB: 81920, deviceCores: 100 }

/** A pending, unschedulable Pod whose container asks for `limits` (GPU) and `requests` (CPU, memory). */
function pod(limits: Record<string, string>, requests: Record<string, string> = {}, more: Record<string, unknown> = {}): unknown {
  return {
    metadata: { name: 'p', namespace: 'anyone' },
    spec: { containers: [{ name: 'main', resources: { limits, requests } }], ...more },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }
  }
}

t.test('a cell is the smallest of the pool Nodes that are listed, Ready and have a healthy device', async (t) => {
  t.same(observedCellSize([node()], POOL_UID, LISTED), CELL)
  const nodes = [
    node(),
    node({ name: 'pool-1', cpu: '3500m', memory: '48Gi', devices: [{ ...A100, devmem: 40960, devcore: 50 }] }),
    // None of these says what a cell offers:
    node({ name: 'pool-2', ready: false, cpu: '1' }),
    node({ name: 'elsewhere', cpu: '1' }),
    node({ name: 'pool-1', uid: 'other-pool', cpu: '1' }),
    node({ name: 'pool-2', devices: undefined, cpu: '1' }),
    node({ name: 'pool-2', devices: [{ ...A100, health: false }], cpu: '1' }),
    node({ name: 'pool-2', cpu: 'lots' }),
    null,
    'garbage'
  ]
  t.same(observedCellSize(nodes, POOL_UID, LISTED), {
    cpuMillicores: 3500,
    memoryBytes: 32 * GIB,
    devices: 1,
    deviceMemoryMiB: 40960,
    deviceCores: 50
  })
  t.equal(observedCellSize([node({ ready: false })], POOL_UID, LISTED), undefined)
})

t.test("a Pod's CPU and memory: containers summed with sidecars, the largest init container if more, plus overhead", async (t) => {
  const spec = {
    containers: [{ resources: { requests: { cpu: '500m', memory: '1Gi' } } }, { resources: { limits: { cpu: '1', memory: '512Mi' } } }],
    initContainers: [
      { resources: { requests: { cpu: '4', memory: '100Mi' } } },
      { restartPolicy: 'Always', resources: { requests: { cpu: '250m', memory: '256Mi' } } }
    ],
    overhead: { cpu: '100m', memory: '64Mi' }
  }
  t.same(podCompute(spec), { cpuMillicores: 4100, memoryBytes: 1792 * 2 ** 20 + 64 * 2 ** 20 })
  t.same(podCompute({}), { cpuMillicores: 0, memoryBytes: 0 })
  t.equal(podCompute({ containers: [{ resources: { requests: { cpu: 'many' } } }] }), 'Unreadable')
})

t.test('the fit: every figure within the cell', async (t) => {
  const fits = { devices: 1, memoryMiB: 8000, cores: 30, cpuMillicores: 8000, memoryBytes: 32 * GIB }
  t.ok(fitsCell(fits, CELL))
  t.notOk(fitsCell({ ...fits, cpuMillicores: 8001 }, CELL))
  t.notOk(fitsCell({ ...fits, memoryBytes: 32 * GIB + 1 }, CELL))
  t.notOk(fitsCell({ ...fits, devices: 2 }, CELL))
  t.notOk(fitsCell({ ...fits, memoryMiB: 81921 }, CELL))
  t.notOk(fitsCell({ ...fits, cores: 101 }, CELL))
})

t.test('a Pod asking one GPU and 100,000 CPUs is not demand: it is counted as unrunnable', async (t) => {
  const pods = [
    pod({ 'nvidia.com/gpu': '1' }, { cpu: '100000' }),
    pod({ 'nvidia.com/gpu': '1' }, { memory: '1Ti' }),
    pod({ 'nvidia.com/gpu': '2' }),
    pod({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '90000' }),
    pod({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '8000' }, { cpu: '2', memory: '8Gi' })
  ]
  t.same(readDemand(pods, SPEC, CELL), {
    pendingPods: 1,
    shapes: [{ devices: 1, memoryMiB: 8000, cores: 0, pods: 1 }],
    unreadablePods: 0,
    unrunnablePods: 4
  })
  t.equal(readDemand(pods, SPEC).pendingPods, 5, 'without a known cell every Pod counts')
})

/** A CellNodeSet listing pool-0, with demand read and `status` as stored. */
function cns(status?: CellNodeSetInput['status']): CellNodeSetInput {
  return {
    metadata: { name: 'pool', namespace: 'ns', generation: 1, finalizers: ['cells.kubeswift.io/workload-nodes'] },
    spec: { kubeconfigSecretRef: { name: 'wl', key: 'value' }, poolUID: POOL_UID, nodes: [{ name: 'pool-0' }], demand: SPEC },
    ...(status !== undefined ? { status } : {})
  }
}
const observed = (n: unknown): ObservedNode => ({ node: n, beats: { watchedSince: 0 }, pods: { read: true, items: [] } })
const HUNGRY = pod({ 'nvidia.com/gpu': '1' }, { cpu: '100000' })

t.test('the pass reports the cell it judged by and the unrunnable Pods; a pool without a Ready Node keeps the last cell', async (t) => {
  const seen = decide(
    cns(),
    { reachability: { reason: 'Reachable', message: '' }, nodes: [observed(node())], unbound: { read: true, items: [HUNGRY] } },
    NOW
  )
  t.same(seen.status.demand, { read: true, pendingPods: 0, shapes: [], unrunnablePods: 1, cell: CELL })
  const remembered = decide(
    cns({ demand: { read: true, pendingPods: 0, shapes: [], cell: CELL } }),
    { reachability: { reason: 'Reachable', message: '' }, nodes: [], unbound: { read: true, items: [HUNGRY] } },
    NOW
  )
  t.same(remembered.status.demand, { read: true, pendingPods: 0, shapes: [], unrunnablePods: 1, cell: CELL })
  const never = decide(
    cns(),
    { reachability: { reason: 'Reachable', message: '' }, nodes: [], unbound: { read: true, items: [HUNGRY] } },
    NOW
  )
  t.same(never.status.demand, { read: true, pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 0, cores: 0, pods: 1 }] })
})
