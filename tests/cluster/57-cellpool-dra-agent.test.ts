/**
 * A cell pool in HAMi's DRA mode (docs/workload.md, "HAMi's DRA mode"): the `gpuhooks-cellpool`
 * driver plays Metacontroller against the hook service, the workload agent runs as a real process
 * against a second kube-apiserver (the workload cluster) with a real kube-scheduler of its own,
 * and the test plays KubeSwift (guest statuses), the kubelets (Nodes, Leases) and HAMi's DRA
 * driver: it writes each cell's ResourceSlice as HAMi's kubelet plugin publishes it (pool and
 * nodeName the Node's name, one `hami-gpu-0` with consumable `cores` and `memory`,
 * `allowMultipleAllocations`). The scheduler allocates the claims (consumedCapacity, reservedFor)
 * and binds the Pods; the workload cluster has no controller manager, so the test removes a
 * deleted Pod's reservation and allocation itself, in two steps where the resourceclaim
 * controller takes one: in between, the claim is allocated and reserved for no Pod, as one
 * allocated by a driver that does not reserve (an allocation in flight, for the agent).
 *
 * Covered: the capacity in the rows; a claim's share counted; demand from an unallocated claim's
 * capacity request scaling the pool to 2; a drain held by an allocated claim and by one in flight
 * (allocated, reserved for no Pod) until the allocation is gone; a device without
 * allowMultipleAllocations reported as the consumable-capacity gate off.
 */
import t from 'tap'
import { nodeRef, WORK_NAMESPACE } from './support/agent.ts'
import {
  AUTOSCALING_ONE_TO_TWO,
  bootGuests,
  cellNodeSetRef,
  listGuests,
  poolManifest,
  scenarioWorkloadCluster
} from './support/cellpool.ts'
import { startCellPoolAgentScenario } from './support/cellpool-agent.ts'
import { eventually, roundsUntil } from './support/env.ts'
import type { ResourceRef } from './support/kube.ts'
import { condition, reader } from './support/reads.ts'
import type { JsonObject } from '../support/merge.ts'
import { HAMI_DRA_DRIVER as DRIVER } from '../../hooks/api/cellnodeset.ts'

/** Scenario reads are loose views, checked by value. */
type Obj = any

const NS = 'cells'
const POOL = 'hami'
const DRA = 'resource.k8s.io/v1'
/** HAMi's chart names its DeviceClass after the driver. */
const CLASS = DRIVER

const scenario = await startCellPoolAgentScenario(NS, { scheduler: true })
const { kube, cluster, wl, kubelets, registrationLabels } = scenario
const infra = reader<Obj>(kube)
const work = reader<Obj>(wl)
const poolRef: ResourceRef = { apiVersion: 'cells.kubeswift.io/v1alpha1', resource: 'gpucellpools', namespace: NS, name: POOL }
const cnsRef = cellNodeSetRef(NS, POOL)
const claimRef = (name: string): ResourceRef => ({ apiVersion: DRA, resource: 'resourceclaims', namespace: WORK_NAMESPACE, name })
const podRef = (name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE, name })
const sliceRef = (node: string): ResourceRef => ({ apiVersion: DRA, resource: 'resourceslices', name: `${node}-${DRIVER}` })
const cellOf = (p: Obj, name: string): Obj => (p.status?.cells ?? []).find((c: Obj) => c.name === name)
const rowOf = (c: Obj, name: string): Obj => (c?.status?.nodes ?? []).find((r: Obj) => r.name === name)
const phases = (p: Obj): string[] => (p.status?.cells ?? []).map((c: Obj) => `${c.name}:${c.phase}`)

await wl.create(
  { apiVersion: DRA, resource: 'deviceclasses' },
  {
    apiVersion: DRA,
    kind: 'DeviceClass',
    metadata: { name: CLASS },
    spec: { selectors: [{ cel: { expression: `device.driver == '${DRIVER}' && device.attributes['${DRIVER}'].type == 'hami-gpu'` } }] }
  }
)

/** HAMi's kubelet plugin publishes the Node's GPU (80 GiB, 100 cores); `shared: false` as a server with DRAConsumableCapacity off stores it. */
async function publishSlice(node: string, shared = true): Promise<void> {
  const device: JsonObject = {
    name: 'hami-gpu-0',
    attributes: { type: { string: 'hami-gpu' }, uuid: { string: `GPU-${node}` }, productName: { string: 'NVIDIA A100-SXM4-80GB' } },
    capacity: {
      cores: { value: '100', requestPolicy: { default: '100', validRange: { min: '0', max: '100', step: '1' } } },
      memory: { value: '80Gi', requestPolicy: { default: '80Gi', validRange: { min: '1Mi', max: '80Gi', step: '1Mi' } } }
    }
  }
  if (shared) device.allowMultipleAllocations = true
  else for (const capacity of Object.values(device.capacity as Record<string, Obj>)) delete capacity.requestPolicy
  const body: JsonObject = {
    apiVersion: DRA,
    kind: 'ResourceSlice',
    metadata: { name: `${node}-${DRIVER}` },
    spec: { driver: DRIVER, nodeName: node, pool: { name: node, generation: 1, resourceSliceCount: 1 }, devices: [device] }
  }
  const old = await work.get(sliceRef(node))
  if (old === undefined) await wl.create({ apiVersion: DRA, resource: 'resourceslices' }, body)
  else {
    ;(body.spec as Obj).pool.generation = old.spec.pool.generation + 1
    await wl.update(sliceRef(node), { ...body, metadata: { ...(body.metadata as object), resourceVersion: old.metadata.resourceVersion } })
  }
}

/** KubeSwift, the kubelets and HAMi's driver: a guest boots, its kubelet registers a Node that can hold Pods, HAMi publishes its GPU. */
async function playCells(): Promise<void> {
  await bootGuests(kube, NS)
  for (const g of await listGuests(kube, NS)) {
    const name = String((g.metadata as Obj).name)
    if ((g.status as Obj)?.phase !== 'Running' || kubelets.renewing().includes(name) || (await work.get(nodeRef(name))) !== undefined)
      continue
    await kubelets.join(name, await registrationLabels(name))
    const allocatable = { pods: '110', cpu: '8', memory: '32Gi' }
    await wl.request(
      'PATCH',
      `/api/v1/nodes/${name}/status`,
      { status: { allocatable, capacity: allocatable } },
      'application/merge-patch+json'
    )
    await publishSlice(name)
  }
}

const sync = (): Promise<void> => scenario.sync(POOL)

function until(what: string, check: (p: Obj) => boolean, seconds = 120): Promise<Obj> {
  return roundsUntil(what, {
    round: async () => {
      await sync()
      await playCells()
    },
    read: () => infra.must(poolRef),
    check,
    seconds,
    explain: async (p) =>
      `cells ${JSON.stringify(p.status?.cells?.map((c: Obj) => [c.name, c.phase, c.reason, c.message]))}\n` +
      `conditions ${JSON.stringify(p.status?.conditions?.map((c: Obj) => [c.type, c.status, c.reason, c.message]))}\n` +
      `CellNodeSet status ${JSON.stringify((await infra.get(cnsRef))?.status)}\nagent log:\n${scenario.agentLogTail()}`
  })
}

/** A claim on the class asking `cores` and `memory` of a device, and a Pod using it, for the scheduler to place. */
async function podWithShare(name: string, cores: string, memory: string): Promise<void> {
  await wl.create(
    { apiVersion: DRA, resource: 'resourceclaims', namespace: WORK_NAMESPACE },
    {
      apiVersion: DRA,
      kind: 'ResourceClaim',
      metadata: { name, namespace: WORK_NAMESPACE },
      spec: {
        devices: {
          requests: [
            {
              name: 'gpu',
              exactly: { deviceClassName: CLASS, allocationMode: 'ExactCount', count: 1, capacity: { requests: { cores, memory } } }
            }
          ]
        }
      }
    }
  )
  await wl.create(
    { apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: WORK_NAMESPACE },
      spec: {
        containers: [{ name: 'main', image: 'busybox', resources: { claims: [{ name: 'gpu' }] } }],
        resourceClaims: [{ name: 'gpu', resourceClaimName: name }],
        tolerations: [{ operator: 'Exists' }]
      }
    }
  )
}

/** The claim once the scheduler has allocated it. */
function allocated(name: string): Promise<Obj> {
  return eventually(
    `the scheduler to allocate ${name}`,
    async () => {
      const claim = await work.get(claimRef(name))
      return claim?.status?.allocation !== undefined ? claim : undefined
    },
    90_000
  )
}

t.test("HAMi's DRA mode: capacity, shares, demand, a drain held by an allocation, the gate off", async (t) => {
  await cluster.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify(
      poolManifest(POOL, NS, {
        ...AUTOSCALING_ONE_TO_TWO,
        replicas: 1,
        capacity: { hami: { mode: 'DRA', deviceClassName: CLASS } },
        workloadCluster: scenarioWorkloadCluster(POOL)
      })
    )
  })
  const one = await until('hami-0 Ready from its ResourceSlice', (p) => cellOf(p, 'hami-0')?.phase === 'Ready')
  t.same(one.status.cellDeviceShape, { memoryMiB: 81920, cores: 100 }, "the cell shape from the slice's capacity")
  const cns = await infra.must(cnsRef)
  t.same(cns.spec.dra, { deviceClassName: CLASS })
  t.match(rowOf(cns, 'hami-0'), {
    registration: 'Parsed',
    consumableCapacity: 'Enabled',
    devices: [{ id: 'GPU-hami-0', memoryMiB: 81920, cores: 100, healthy: true }],
    allocations: { read: true, pods: 0 }
  })
  t.same(cns.status.dra, { deviceClass: 'Found', claimsRead: true })
  t.match(cns.status.physicalGPUs, { published: 0, ready: 0, held: 0, own: 0 }, "the infrastructure cluster's summary")

  // A share of 30 cores and 8 GiB, allocated and bound by the scheduler.
  await podWithShare('share-a', '30', '8Gi')
  const a = await allocated('share-a')
  t.match(a.status.allocation.devices.results, [
    { driver: DRIVER, pool: 'hami-0', device: 'hami-gpu-0', consumedCapacity: { cores: '30', memory: '8Gi' } }
  ])
  const counted = await eventually(
    "the agent to count share-a's allocation",
    async () => {
      await sync()
      const row = rowOf(await infra.must(cnsRef), 'hami-0')
      return row?.allocations?.pods === 1 ? row : undefined
    },
    60_000
  )
  t.match(counted.devices, [{ allocatedCores: 30, allocatedMemoryMiB: 8192 }])

  // 80 cores do not fit the 70 left: the Pod is unschedulable, its claim's request is the demand.
  await podWithShare('share-b', '80', '16Gi')
  const up = await until('a scale-up from the claim', (p) => p.status?.desiredReplicas === 2)
  t.match(up.status.demand, { pendingPods: 1, satisfiable: 1 })
  t.match((await infra.must(cnsRef)).status.demand.shapes, [{ devices: 1, memoryMiB: 16384, cores: 80, pods: 1 }])
  const two = await until('two Ready cells', (p) => p.status?.readyCells === 2)
  t.same(phases(two), ['hami-0:Ready', 'hami-1:Ready'])
  const b = await allocated('share-b')
  t.match(
    b.status.allocation.devices.results,
    [{ pool: 'hami-1', consumedCapacity: { cores: '80' } }],
    'the scheduler placed it on the new cell'
  )
  t.ok((b.status.reservedFor ?? []).length > 0, 'reserved for its Pod')

  // A smaller ceiling: hami-1 drains, held by share-b's allocation.
  await kube.patch(poolRef, { spec: { autoscaling: { maxReplicas: 1 } } }, 'merge')
  const draining = await until('hami-1 draining', (p) => cellOf(p, 'hami-1')?.phase === 'Draining')
  t.equal(draining.status.desiredReplicas, 1)
  await eventually(
    'the agent to cordon hami-1',
    async () => ((await work.must(nodeRef('hami-1'))).spec.unschedulable === true ? true : undefined),
    60_000
  )
  // Longer than the 30 s a drain lasts at least: the allocation holds it.
  const held = await until(
    'the drain held by the allocation',
    (p) => Date.now() - Date.parse(cellOf(p, 'hami-1')?.lastTransitionTime ?? '') > 35_000,
    90
  )
  t.equal(cellOf(held, 'hami-1')?.phase, 'Draining')
  t.match(rowOf(await infra.must(cnsRef), 'hami-1').allocations, { read: true, pods: 1 })

  // The Pod goes; its claim is still allocated with reservedFor emptied: in flight, the drain still waits.
  await wl.delete(podRef('share-b'))
  await wl.request(
    'PATCH',
    `/apis/${DRA}/namespaces/${WORK_NAMESPACE}/resourceclaims/share-b/status`,
    { status: { reservedFor: null } },
    'application/merge-patch+json'
  )
  const inFlight = await eventually(
    'the agent to report share-b in flight',
    async () => {
      await sync()
      const row = rowOf(await infra.must(cnsRef), 'hami-1')
      return row?.allocations?.inFlight === true ? row : undefined
    },
    60_000
  )
  t.match(inFlight.allocations, { read: true, pods: 0, inFlight: true })
  await sync()
  t.equal(cellOf(await infra.must(poolRef), 'hami-1')?.phase, 'Draining', 'an allocation in flight holds the drain')

  // Deallocated: the drain completes and the cell's guest goes.
  await wl.request(
    'PATCH',
    `/apis/${DRA}/namespaces/${WORK_NAMESPACE}/resourceclaims/share-b/status`,
    { status: { allocation: null } },
    'application/merge-patch+json'
  )
  const gone = await until('hami-1 removed', (p) => (p.status?.cells ?? []).length === 1, 180)
  t.same(phases(gone), ['hami-0:Ready'])
  t.ok(await work.get(podRef('share-a')), 'the Pod on hami-0 is never touched')

  // The API server of a cluster with DRAConsumableCapacity off stores HAMi's device without allowMultipleAllocations.
  await publishSlice('hami-0', false)
  const off = await eventually(
    'the agent to report the gate off',
    async () => {
      await sync()
      const row = rowOf(await infra.must(cnsRef), 'hami-0')
      return row?.consumableCapacity === 'Disabled' ? row : undefined
    },
    60_000
  )
  t.match(off.message, /DRAConsumableCapacity is off/)
  t.match(off.devices, [{ memoryMiB: 81920, cores: 100 }], 'the capacity is still shown, never zero left')
  t.equal(condition(await infra.must(poolRef), 'Ready')?.status, 'True')
})
