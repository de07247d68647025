// HAMi's DRA mode as the workload agent reads it (hooks/agent/nodeset/demand/dra.ts and the core
// with spec.dra): devices from ResourceSlices, allocations from ResourceClaims, demand from pending
// Pods' unallocated claims. The objects are written here in the shapes HAMi's driver and the
// scheduler write (Project-HAMi/k8s-dra-driver hami_core.go; k8s.io/api resource/v1).
import t from 'tap'
import fc from 'fast-check'
import { claimDemand, claimIndex, draNodeRow } from '../../hooks/agent/nodeset/demand/dra.ts'
import { decide } from '../../hooks/agent/nodeset/decide/core.ts'
import type { ObservedNode } from '../../hooks/agent/model/observed.ts'
import { cns, entry, node, NOW, record, snap } from '../support/agent-core-fixtures.ts'
import { emptyWorkload } from '../support/agent-controller-fixture.ts'
import type { WorkloadApi } from '../../hooks/agent/model/apis.ts'
import { readSnapshot } from '../../hooks/agent/nodeset/snapshot.ts'
import { HeartbeatTracker } from '../../hooks/agent/nodeset/decide/liveness.ts'
import { PhysicalGpuIndex } from '../../hooks/agent/nodeset/physical-gpus.ts'

const DRIVER = 'hami-core-gpu.project-hami.io'
const CLASS = 'hami-core-gpu.project-hami.io'
const NODE = 'pool-a-0'

/** A HAMi device as its kubelet plugin publishes it (gate on unless `shared` is false). */
function device(minor: number, more: { shared?: boolean; capacity?: Record<string, unknown> | null } = {}): Record<string, unknown> {
  const d: Record<string, unknown> = {
    name: `hami-gpu-${minor}`,
    attributes: { type: { string: 'hami-gpu' }, uuid: { string: `GPU-${minor}` }, productName: { string: 'NVIDIA A100-SXM4-80GB' } }
  }
  if (more.capacity !== null) {
    d.capacity = more.capacity ?? {
      cores: { value: '100', requestPolicy: { default: '100', validRange: { min: '0', max: '100', step: '1' } } },
      memory: { value: '80Gi' }
    }
  }
  if (more.shared !== false) d.allowMultipleAllocations = true
  return d
}

function slice(devices: unknown[], nodeName = NODE): Record<string, unknown> {
  return {
    metadata: { name: `${nodeName}-${DRIVER}-x` },
    spec: { driver: DRIVER, nodeName, pool: { name: nodeName, generation: 1, resourceSliceCount: 1 }, devices }
  }
}

/** A claim allocated on `dev` of NODE, consuming `cores` and `memory`, reserved for a Pod unless `reserved` is false. */
function allocated(name: string, dev: string, consumed: Record<string, string>, reserved = true): Record<string, unknown> {
  const status: Record<string, unknown> = {
    allocation: {
      devices: { results: [{ request: 'gpu', driver: DRIVER, pool: NODE, device: dev, shareID: `s-${name}`, consumedCapacity: consumed }] }
    }
  }
  if (reserved) status.reservedFor = [{ resource: 'pods', name: `pod-${name}`, uid: `u-${name}` }]
  return { metadata: { name, namespace: 'team' }, spec: { devices: { requests: [] } }, status }
}

/** An unallocated claim on `cls` asking `requests` of capacity. */
function unallocated(name: string, cls: string, requests?: Record<string, string>, count?: number): Record<string, unknown> {
  const exactly: Record<string, unknown> = { deviceClassName: cls, allocationMode: 'ExactCount', count: count ?? 1 }
  if (requests !== undefined) exactly.capacity = { requests }
  return { metadata: { name, namespace: 'team' }, spec: { devices: { requests: [{ name: 'gpu', exactly }] } } }
}

/** A pending unschedulable Pod using the claim `claim` through a template (its status names the generated claim). */
function pendingPod(name: string, claim: string): Record<string, unknown> {
  return {
    metadata: { name, namespace: 'team' },
    spec: {
      containers: [{ name: 'main', resources: { claims: [{ name: 'gpu' }] } }],
      resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'tpl' }]
    },
    status: {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
      resourceClaimStatuses: [{ name: 'gpu', resourceClaimName: claim }]
    }
  }
}

const read = (items: unknown[]) => ({ read: true, items })

t.test("a Node's devices are HAMi's slice devices with their capacity and what claims consume", async (t) => {
  const row = draNodeRow(
    NODE,
    read([slice([device(0), device(1)]), slice([device(9)], 'other-node')]),
    read([allocated('a', 'hami-gpu-0', { cores: '30', memory: '8Gi' }), allocated('b', 'hami-gpu-0', { cores: '20', memory: '4Gi' })])
  )
  t.same(row, {
    devices: [
      {
        id: 'GPU-0',
        type: 'NVIDIA A100-SXM4-80GB',
        memoryMiB: 81920,
        cores: 100,
        healthy: true,
        allocatedMemoryMiB: 12288,
        allocatedCores: 50
      },
      { id: 'GPU-1', type: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81920, cores: 100, healthy: true }
    ],
    registration: 'Parsed',
    allocations: { read: true, pods: 2 },
    consumableCapacity: 'Enabled'
  })
})

t.test('a claim allocated on the Node and reserved for no Pod is in flight', async (t) => {
  const row = draNodeRow(NODE, read([slice([device(0)])]), read([allocated('a', 'hami-gpu-0', { cores: '30', memory: '8Gi' }, false)]))
  t.same(row.allocations, { read: true, pods: 0, inFlight: true })
})

t.test('claims of other Nodes, drivers or devices are not the Node’s', async (t) => {
  const other = allocated('x', 'hami-gpu-0', { cores: '30' })
  ;(other.status as any).allocation.devices.results[0].pool = 'other-node'
  const nvidia = allocated('y', 'hami-gpu-0', { cores: '30' })
  ;(nvidia.status as any).allocation.devices.results[0].driver = 'gpu.nvidia.com'
  const unknownDevice = allocated('z', 'hami-gpu-7', { cores: '30' })
  const row = draNodeRow(NODE, read([slice([device(0)])]), read([other, nvidia, unknownDevice]))
  t.same(row.allocations, { read: true, pods: 0 })
  t.same(row.devices?.[0]?.allocatedCores, undefined)
})

t.test('without allowMultipleAllocations the consumable-capacity gate is off, said so, capacity still shown', async (t) => {
  const row = draNodeRow(NODE, read([slice([device(0, { shared: false })])]), read([]))
  t.equal(row.consumableCapacity, 'Disabled')
  t.match(row.message, /DRAConsumableCapacity is off/)
  t.same(
    row.devices?.map((d) => [d.memoryMiB, d.cores, d.healthy]),
    [[81920, 100, true]]
  )
})

t.test('a device without cores or memory capacity is unknown, not zero left', async (t) => {
  const row = draNodeRow(NODE, read([slice([device(0, { capacity: null })])]), read([]))
  t.equal(row.consumableCapacity, 'Unpublished')
  t.match(row.message, /share is unknown/)
})

t.test('no slice is Missing; an unlisted slice or claim list is unread', async (t) => {
  t.same(draNodeRow(NODE, read([]), read([])), { devices: [], registration: 'Missing', allocations: { read: true, pods: 0 } })
  t.same(draNodeRow(NODE, { read: false, items: [] }, read([])).allocations, { read: false, pods: 0 })
  t.same(draNodeRow(NODE, read([slice([device(0)])]), { read: false, items: [] }).allocations, { read: false, pods: 0 })
  t.same(draNodeRow(NODE, read([slice([device(0)])]), { read: true, items: [], truncated: true }).allocations, { read: false, pods: 0 })
})

t.test('a Pod’s unallocated claims on the class are its demand shape', async (t) => {
  const index = claimIndex([
    unallocated('c1', CLASS, { cores: '30', memory: '8Gi' }),
    unallocated('c2', 'gpu.nvidia.com'),
    unallocated('c3', CLASS, undefined, 2),
    unallocated('bad', CLASS, { memory: 'lots' }),
    allocated('done', 'hami-gpu-0', {})
  ])
  t.same(claimDemand(pendingPod('p1', 'c1'), index, CLASS), { devices: 1, memoryMiB: 8192, cores: 30 })
  t.equal(claimDemand(pendingPod('p2', 'c2'), index, CLASS), undefined, 'another class')
  t.same(claimDemand(pendingPod('p3', 'c3'), index, CLASS), { devices: 2, memoryMiB: 0, cores: 0 }, 'whole devices')
  t.equal(claimDemand(pendingPod('p4', 'bad'), index, CLASS), 'Unreadable')
  t.equal(claimDemand(pendingPod('p5', 'done'), index, CLASS), undefined, 'an allocated claim is no demand')
  t.equal(claimDemand(pendingPod('p6', 'missing'), index, CLASS), undefined, 'a claim not listed')
})

/** A DRA pool's CellNodeSet with one cell whose Node is recorded as the agent's. */
const draCns = (demand = false) => {
  const input = cns([entry()], {
    status: { nodes: [{ name: NODE, present: true, instance: 'uid-guest-0', applied: record() }] }
  })
  input.spec.dra = { deviceClassName: CLASS }
  if (demand) input.spec.demand = { resources: ['nvidia.com/gpu'], nodeLabels: {} }
  return input
}
const withSlices = (n: ObservedNode, slices: unknown[]): ObservedNode => ({ ...n, slices: read(slices) })

t.test('the core writes DRA rows, status.dra and demand from claims for a pool with spec.dra', async (t) => {
  const snapshot = snap([withSlices(node(), [slice([device(0)])])], [pendingPod('p1', 'c1')])
  snapshot.dra = {
    deviceClass: 'Found',
    claims: read([allocated('a', 'hami-gpu-0', { cores: '30', memory: '8Gi' }), unallocated('c1', CLASS, { cores: '50', memory: '16Gi' })])
  }
  const { status } = decide(draCns(true), snapshot, NOW)
  const row = status.nodes?.[0]
  t.equal(row?.registration, 'Parsed')
  t.same(row?.allocations, { read: true, pods: 1 })
  t.equal(row?.devices?.[0]?.allocatedCores, 30)
  t.same(status.dra, { deviceClass: 'Found', claimsRead: true })
  t.same(status.demand?.shapes, [{ devices: 1, memoryMiB: 16384, cores: 50, pods: 1 }])
})

t.test('a missing DeviceClass or unread claims are said in status.dra; demand is then unread', async (t) => {
  const snapshot = snap([withSlices(node(), [slice([device(0)])])], [pendingPod('p1', 'c1')])
  snapshot.dra = { deviceClass: 'Missing', claims: { read: false, items: [] } }
  const { status } = decide(draCns(true), snapshot, NOW)
  t.match(status.dra, { deviceClass: 'Missing', claimsRead: false, message: /does not exist.*could not be listed/ })
  t.equal(status.demand?.read, false)
  t.same(status.nodes?.[0]?.allocations, { read: false, pods: 0 })
})

// Any shape of slice, claim and Pod: the reader never throws and stays within the schema's bounds.
const json: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom<unknown>(null, true, 0, -1, 1.5, '', 'x', '100', '8Gi', '-1', '1e400', DRIVER, NODE, CLASS, 'hami-gpu-0', '__proto__'),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(
      fc.constantFrom(
        'spec',
        'status',
        'metadata',
        'driver',
        'pool',
        'name',
        'nodeName',
        'devices',
        'capacity',
        'cores',
        'memory',
        'value',
        'allocation',
        'results',
        'device',
        'consumedCapacity',
        'reservedFor',
        'requests',
        'exactly',
        'deviceClassName',
        'count',
        'resourceClaims',
        'resourceClaimName',
        'resourceClaimStatuses',
        'allowMultipleAllocations',
        'attributes',
        'uuid',
        'string',
        'namespace',
        '__proto__'
      ),
      tie('v'),
      { maxKeys: 5 }
    )
  )
})).v

t.test('any shape of slice, claim or Pod: no throw, figures whole and non-negative', async () => {
  fc.assert(
    fc.property(fc.array(json, { maxLength: 4 }), fc.array(json, { maxLength: 4 }), json, (slices, claims, pod) => {
      const row = draNodeRow(NODE, read(slices), read(claims))
      for (const d of row.devices ?? []) {
        for (const v of [d.memoryMiB, d.cores, d.allocatedMemoryMiB ?? 0, d.allocatedCores ?? 0]) {
          if (!Number.isSafeInteger(v) || v < 0) throw new Error(`bad figure ${v}`)
        }
      }
      const shape = claimDemand(pod, claimIndex(claims), CLASS)
      if (typeof shape === 'object' && ![shape.devices, shape.memoryMiB, shape.cores].every((v) => Number.isSafeInteger(v) && v >= 0)) {
        throw new Error('bad shape')
      }
    }),
    { numRuns: 2000 }
  )
})

t.test("the infrastructure cluster's physical GPUs: written with the status's time, a write only when the counts change", async (t) => {
  const input = draCns()
  input.spec.physicalGPUs = { driver: 'gpu.kubeswift.io' }
  const snapshot = snap([withSlices(node(), [slice([device(0)])])])
  snapshot.dra = { deviceClass: 'Found', claims: read([]) }
  const gpus = { published: 4, ready: 3, held: 1, own: 0 }
  const first = decide(input, snapshot, NOW, { physicalGPUs: gpus })
  t.same(first.status.physicalGPUs, { observedTime: '2026-11-30T12:00:00Z', ...gpus })
  const later = new Date(NOW.getTime() + 10_000)
  const same = decide({ ...input, status: first.status }, snapshot, later, { physicalGPUs: gpus })
  t.equal(same.writeStatus, false, 'the same counts 10 s later: no write')
  t.equal(same.status.physicalGPUs?.observedTime, '2026-11-30T12:00:00Z')
  const changed = decide({ ...input, status: first.status }, snapshot, later, { physicalGPUs: { ...gpus, held: 2 } })
  t.equal(changed.writeStatus, true, 'a claim taken: written at once')
  t.same(changed.status.physicalGPUs, { observedTime: '2026-11-30T12:00:10Z', ...gpus, held: 2 })
  t.equal(decide(input, snapshot, NOW).status.physicalGPUs, undefined, 'informers not listed yet: no summary')
  const plain = cns([entry()])
  t.equal(decide(plain, snap([node()]), NOW, { physicalGPUs: gpus }).status.physicalGPUs, undefined, 'not asked for: none')
})

t.test('the snapshot of a DRA pool: slices by field selector per Node, claims in pages, the class by name', async (t) => {
  const calls: string[] = []
  const api: WorkloadApi = {
    ...emptyWorkload,
    listNodes: async () => [node().node],
    listResourceSlices: async (selector) => (calls.push(`slices ${selector}`), [slice([device(0)])]),
    listResourceClaimPage: async (limit, token) => {
      calls.push(`claims limit=${limit}${token === undefined ? '' : ` continue=${token}`}`)
      return token === undefined ? { items: [allocated('a', 'hami-gpu-0', { cores: '30' })], continue: 'next' } : { items: [] }
    },
    getDeviceClass: async (name) => (calls.push(`class ${name}`), undefined)
  }
  const spec = { poolUID: 'uid-pool-a', dra: { deviceClassName: CLASS } }
  const snapshotOf = (from: WorkloadApi, s: Parameters<typeof readSnapshot>[1]) =>
    readSnapshot(
      from,
      s,
      new HeartbeatTracker(),
      () => 0,
      async () => ({ read: true, items: [] })
    )
  const got = await snapshotOf(api, spec)
  t.same(calls, [
    `slices spec.nodeName=${NODE},spec.driver=${DRIVER}`,
    'claims limit=500',
    'claims limit=500 continue=next',
    `class ${CLASS}`
  ])
  t.equal(got.nodes[0]?.slices?.items.length, 1)
  t.same([got.dra?.claims.read, got.dra?.claims.items.length, got.dra?.deviceClass], [true, 1, 'Missing'])
  const plain = await snapshotOf(api, { poolUID: 'uid-pool-a' })
  t.same([plain.dra, plain.nodes[0]?.slices], [undefined, undefined], 'a pool without spec.dra reads no DRA object')
  const failing: WorkloadApi = {
    ...api,
    listResourceSlices: () => Promise.reject(new Error('403')),
    listResourceClaimPage: () => Promise.reject(new Error('403')),
    getDeviceClass: () => Promise.reject(new Error('403'))
  }
  const denied = await snapshotOf(failing, spec)
  t.same(
    [denied.nodes[0]?.slices?.read, denied.dra?.claims.read, denied.dra?.deviceClass],
    [false, false, 'Unread'],
    'refused reads are unread, never a throw'
  )
})

t.test('the physical GPU index counts once per change, nothing before its informers listed', async (t) => {
  let synced = false
  let reads = 0
  const index = new PhysicalGpuIndex({
    synced: () => synced,
    slices: () => (reads++, []),
    claims: () => []
  })
  t.equal(index.counts({ driver: 'gpu.kubeswift.io' }, 'ns'), undefined, 'not listed yet: no summary')
  synced = true
  t.same(index.counts({ driver: 'gpu.kubeswift.io' }, 'ns'), { published: 0, ready: 0, held: 0, own: 0 })
  index.counts({ driver: 'gpu.kubeswift.io' }, 'other')
  t.equal(reads, 1, 'pools without a shared claim share one count')
  index.counts({ driver: 'gpu.kubeswift.io', claimName: 'shared' }, 'ns')
  t.equal(reads, 2, 'a shared claim is counted apart')
  index.changed()
  index.counts({ driver: 'gpu.kubeswift.io' }, 'ns')
  t.equal(reads, 3, 'a change counts again')
})
