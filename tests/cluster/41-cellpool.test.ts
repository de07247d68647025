/**
 * The GPUCellPool controller against a real API server (docs/testing.md §3; docs/cellpool.md): a pool
 * scaled 0→3→1 through the scale subresource, with guest statuses stamped as KubeSwift would and
 * CellNodeSet statuses stamped as the workload agent would; the creation order; a drain held by a
 * Pod; a rolling update; and a finalize. KubeSwift's CRDs are open-schema stand-ins
 * (fixtures/kubeswift-crds.yaml); the `gpuhooks-cellpool` driver plays Metacontroller. The hook
 * service reads the real clock, so each drain takes its 30 s.
 */
import t from 'tap'
import {
  bootGuests,
  cellNodeSetRef,
  CELLS,
  AUTOSCALING_ONE_TO_TWO,
  listGuests,
  PlayedWorkload,
  poolManifest,
  preparePoolNamespace
} from './support/cellpool.ts'
import { eventually, KUBESWIFT_CRDS, roundsUntil } from './support/env.ts'
import { startScenario } from './support/scenario.ts'
import type { ResourceRef } from './support/kube.ts'
import { condition, reader } from './support/reads.ts'
import type { JsonObject } from '../support/merge.ts'

const env = await startScenario({ extraCrds: [KUBESWIFT_CRDS] })
const { kube, cluster } = env
const driver = env.driver('gpuhooks-cellpool')

// Loose views of what the API server returns; every read is checked by value below.
type Obj = any
const { get, must } = reader<Obj>(kube)
const NS = 'cells'
const POOL = 'gpus'
const poolRef: ResourceRef = { apiVersion: CELLS, resource: 'gpucellpools', namespace: NS, name: POOL }
const cnsRef = cellNodeSetRef(NS, POOL)
const seedsRef: ResourceRef = { apiVersion: 'seed.kubeswift.io/v1alpha1', resource: 'swiftseedprofiles', namespace: NS }
const secretsRef: ResourceRef = { apiVersion: 'v1', resource: 'secrets', namespace: NS }

/** The pool (the unit fixtures' spec: node label gpu=on, kubeconfig Secret `kc`) with `replicas` cells. */
const pool = (replicas: number, name = POOL, patch: JsonObject = {}): JsonObject => poolManifest(name, NS, { ...patch, replicas })

const guests = async (): Promise<Obj[]> => listGuests(kube, NS)
/** The kubelets and the workload agent, played: `workload.nodes` holds the Nodes, `workload.demand` the pending Pods. */
const workload = new PlayedWorkload(kube, NS)

/** One round of the whole system: Metacontroller until quiet, then KubeSwift, the kubelets and the agent. */
async function round(name = POOL): Promise<void> {
  await driver.settle({ namespace: NS, name }, { maxPasses: 6 })
  await bootGuests(kube, NS)
  await workload.agentPass(name)
}

/** Rounds of pool `name` until `check` holds (at most `seconds`), checking `always` after each. */
function until(
  what: string,
  check: (p: Obj) => boolean,
  options: { seconds?: number; always?: (p: Obj) => void; name?: string } = {}
): Promise<Obj> {
  const name = options.name ?? POOL
  return roundsUntil(what, {
    round: () => round(name),
    read: () => must({ ...poolRef, name }),
    check,
    seconds: options.seconds ?? 60,
    ...(options.always === undefined ? {} : { always: options.always }),
    explain: (p) => JSON.stringify(p.status?.cells?.map((c: Obj) => [c.name, c.phase, c.reason]))
  })
}

const phases = (p: Obj): string[] => (p.status?.cells ?? []).map((c: Obj) => `${c.name}:${c.phase}`)

t.before(async () => {
  await preparePoolNamespace(cluster, NS)
  await cluster.kubectl(['create', 'secret', 'generic', 'kc', '-n', NS, '--from-literal=value=apiVersion: v1'])
})

t.test('a pool scaled 0 → 3 → 1, a rolling update and a finalize', async (t) => {
  await t.test('at zero replicas: the CellNodeSet only, Ready ScaledToZero', async (t) => {
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pool(0)) })
    const p = await until('the pool to settle at zero', (p) => condition(p, 'WorkloadClusterReachable')?.status === 'True', { seconds: 30 })
    t.same([p.status.replicas, condition(p, 'Ready')?.reason, p.status.selector], [0, 'ScaledToZero', 'cells.kubeswift.io/pool=gpus'])
    const cns = await must(cnsRef)
    t.equal(cns.spec.poolUID, p.metadata.uid)
    t.same(await guests(), [])
  })

  await t.test(
    'scaled to 3 through the scale subresource: at most two machines created at once, each guest after its Secret and seed profile',
    async (t) => {
      await cluster.kubectl(['scale', 'gpucellpool', POOL, '-n', NS, '--replicas=3'])
      let most = 0
      const p = await until('three Ready cells', (p) => p.status?.readyCells === 3, {
        seconds: 90,
        always: (p) => {
          const machines = (p.status?.cells ?? []).filter(
            (c: Obj) => c.guestUID !== undefined && c.readyOnce !== true && !['Ready', 'Draining', 'Deleting', 'Failed'].includes(c.phase)
          )
          most = Math.max(most, machines.length)
        }
      })
      t.ok(most <= 2, `at most two machines being created (saw ${most})`)
      t.same(phases(p), ['gpus-0:Ready', 'gpus-1:Ready', 'gpus-2:Ready'])
      const gs = await guests()
      t.same(gs.map((g: Obj) => g.metadata.name).sort(), ['gpus-0', 'gpus-1', 'gpus-2'])
      t.same(gs[0].spec.seedProfileRef, { name: `${gs[0].metadata.name}-seed` })
      t.match(gs[0].metadata.annotations, { 'cells.kubeswift.io/template-hash': /^[0-9a-f]{10}$/ })
      const secret = await must({ ...secretsRef, name: 'gpus-1-bootstrap' })
      const text = Buffer.from(secret.data['user-data'], 'base64').toString()
      t.match(
        text,
        `--node-labels cells.kubeswift.io/cell=gpus-1,cells.kubeswift.io/cell-index=1,cells.kubeswift.io/pool=gpus,cells.kubeswift.io/pool-uid=${p.metadata.uid},gpu=on`
      )
      t.equal(secret.data.value, secret.data['user-data'])
      const cns = await must(cnsRef)
      t.same(
        cns.spec.nodes.map((n: Obj) => [n.name, n.instance === gs.find((g: Obj) => g.metadata.name === n.name)?.metadata.uid, n.cordon]),
        [
          ['gpus-0', true, false],
          ['gpus-1', true, false],
          ['gpus-2', true, false]
        ]
      )
      t.same(
        [condition(p, 'Ready')?.status, condition(p, 'Progressing')?.reason, condition(p, 'Updated')?.status],
        ['True', 'Settled', 'True']
      )
    }
  )

  await t.test('scaled to 1: both drain; the idle one goes after 30 s, guest first; a Pod holds the other', async (t) => {
    const node = workload.nodes.get('gpus-2')
    if (node !== undefined) node.pods = 1
    await cluster.kubectl(['scale', 'gpucellpool', POOL, '-n', NS, '--replicas=1'])
    const draining = await until('two cells draining', (p) => p.status?.drainingCells === 2, { seconds: 20 })
    t.same(phases(draining), ['gpus-0:Ready', 'gpus-1:Draining', 'gpus-2:Draining'])
    const cns = await must(cnsRef)
    t.same(
      cns.spec.nodes.map((n: Obj) => [n.name, n.cordon]),
      [
        ['gpus-0', false],
        ['gpus-1', true],
        ['gpus-2', true]
      ]
    )
    const p = await until('gpus-1 gone', (p) => !phases(p).some((x) => x.startsWith('gpus-1')), { seconds: 90 })
    t.same(phases(p), ['gpus-0:Ready', 'gpus-2:Draining'])
    t.same((await guests()).map((g: Obj) => g.metadata.name).sort(), ['gpus-0', 'gpus-2'])
    t.equal(await get({ ...seedsRef, name: 'gpus-1-seed' }), undefined)
    t.equal(await get({ ...secretsRef, name: 'gpus-1-bootstrap' }), undefined)
    if (node !== undefined) node.pods = 0
    const done = await until('gpus-2 gone', (p) => p.status?.replicas === 1 && (p.status?.cells ?? []).length === 1, { seconds: 90 })
    t.same(phases(done), ['gpus-0:Ready'])
    t.same([done.status.readyCells, done.status.desiredReplicas, condition(done, 'Ready')?.status], [1, 1, 'True'])
  })

  await t.test('a rolling update replaces the cell with one built from the new template', async (t) => {
    const before = (await guests())[0]
    await cluster.kubectl([
      'patch',
      'gpucellpool',
      POOL,
      '-n',
      NS,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { updatePolicy: { type: 'RollingUpdate' }, cell: { guestTemplate: { imageRef: { name: 'gpu-noble-2' } } } } })
    ])
    const started = await until('the update to start', (p) => condition(p, 'Updated')?.reason === 'RollingUpdate', { seconds: 20 })
    t.same(phases(started), ['gpus-0:Draining'])
    const p = await until('the update to finish', (p) => condition(p, 'Updated')?.status === 'True' && p.status?.readyCells === 1, {
      seconds: 120
    })
    const after = (await guests())[0]
    t.equal(after.metadata.name, 'gpus-0', 'the replacement keeps the index')
    t.not(after.metadata.uid, before.metadata.uid)
    t.same(after.spec.imageRef, { name: 'gpu-noble-2' })
    t.same(phases(p), ['gpus-0:Ready'])
  })

  await t.test('deleting the pool drains, deletes the guests, then everything else, then finalizes', async (t) => {
    await cluster.kubectl(['delete', 'gpucellpool', POOL, '-n', NS, '--wait=false'])
    let sawGuestGoFirst = false
    await eventually(
      'the pool to be finalized',
      async () => {
        try {
          await driver.syncOnce({ namespace: NS, name: POOL })
        } catch (err) {
          if ((await get(poolRef)) === undefined) return true
          throw err
        }
        await workload.agentPass(POOL)
        const left = await guests()
        const secrets = (await kube.list(secretsRef, { labelSelector: 'cells.kubeswift.io/pool=gpus' })).body
        if (left.length === 0 && secrets.length > 0) sawGuestGoFirst = true
        return (await get(poolRef)) === undefined ? true : undefined
      },
      120_000
    )
    t.ok(sawGuestGoFirst, 'the guest went while its Secret was still there')
    t.same(await guests(), [])
    t.equal(await get(cnsRef), undefined)
    t.same(((await kube.list(seedsRef)).body as Obj[]).length, 0)
  })
})

t.test('an autoscaling round: pending Pods add a cell, and once they are gone an idle cell drains away', async (t) => {
  const name = 'auto'
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pool(1, name, AUTOSCALING_ONE_TO_TWO)) })
  const one = await until('one Ready cell', (p) => p.status?.readyCells === 1, { seconds: 60, name })
  t.same(one.status.cellDeviceShape, { memoryMiB: 81920, cores: 100 })
  t.same((await must(cellNodeSetRef(NS, name))).spec.demand.resources, ['nvidia.com/gpu', 'nvidia.com/gpumem', 'nvidia.com/gpucores'])
  workload.demand.set(name, { read: true, pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 8192, cores: 30, pods: 1 }] })
  const up = await until('a scale-up', (p) => p.status?.desiredReplicas === 2, { seconds: 30, name })
  // The round's later passes see the new cell counted in the base: at the ceiling now.
  t.match(condition(up, 'ScalingActive')?.reason, /^(ScaledUp|AtMaxReplicas)$/)
  t.type(up.status.lastScaleUpTime, 'string')
  await until('two Ready cells', (p) => p.status?.readyCells === 2, { seconds: 60, name })
  workload.demand.set(name, { read: true, pendingPods: 0, shapes: [] })
  const down = await until('a scale-down', (p) => p.status?.drainingCells === 1, { seconds: 30, name })
  t.same(phases(down), ['auto-0:Ready', 'auto-1:Draining'], 'the idle cell with the highest index drains')
  t.equal(down.status.desiredReplicas, 1)
  const done = await until('the drained cell gone', (p) => (p.status?.cells ?? []).length === 1, { seconds: 90, name })
  t.same(phases(done), ['auto-0:Ready'])
  t.equal(done.spec.replicas, 1, 'spec.replicas is never written')
})

t.test(
  "a stale pool after a scale-up: the sync the new cell's children trigger sees the pool before the scale-up's status write, and adds no second cell",
  async (t) => {
    const name = 'stale'
    const autoscaling = { enabled: true, minReplicas: 1, maxReplicas: 3, stabilizationWindow: '10m', scaleDown: 'Manual' }
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pool(1, name, { autoscaling })) })
    await until('one Ready cell', (p) => p.status?.readyCells === 1, { seconds: 60, name })
    workload.demand.set(name, { read: true, pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 8192, cores: 30, pods: 1 }] })
    await workload.agentPass(name)
    const before = (await must({ ...poolRef, name })).status
    await driver.syncOnce({ namespace: NS, name })
    const up = await must({ ...poolRef, name })
    t.same([up.status.desiredReplicas, condition(up, 'ScalingActive')?.reason], [2, 'ScaledUp'])
    const bootstraps = async (): Promise<string[]> =>
      ((await kube.list(secretsRef)).body as Obj[])
        .map((s: Obj) => String(s.metadata.name))
        .filter((n) => n.startsWith(`${name}-`))
        .sort()
    t.same(await bootstraps(), ['stale-0-bootstrap', 'stale-1-bootstrap'])
    // The cache has not seen the scale-up's status write (desiredReplicas 1, no lastScaleUpTime).
    t.same([before.desiredReplicas, before.lastScaleUpTime], [1, undefined])
    await driver.syncOnce({ namespace: NS, name }, { staleStatus: before })
    const after = await must({ ...poolRef, name })
    t.same([after.status.desiredReplicas, condition(after, 'ScalingActive')?.reason], [2, 'Stabilizing'])
    t.same(await bootstraps(), ['stale-0-bootstrap', 'stale-1-bootstrap'], 'no third cell')
    const two = await until('two Ready cells', (p) => p.status?.readyCells === 2, { seconds: 60, name })
    t.same(phases(two), ['stale-0:Ready', 'stale-1:Ready'])
    t.same(await bootstraps(), ['stale-0-bootstrap', 'stale-1-bootstrap'], 'two cells in all for one pending Pod')
  }
)

t.test("a scale-up waits for a free physical GPU: the agent's summary of the real ResourceSlices and ResourceClaims", async (t) => {
  const name = 'scarce'
  const dra = 'resource.k8s.io/v1'
  const request = { name: 'gpu', exactly: { deviceClassName: 'vfio-gpu' } }
  await kube.create(
    { apiVersion: dra, resource: 'resourceclaimtemplates', namespace: NS },
    { metadata: { name: 'single-vfio-gpu', namespace: NS }, spec: { spec: { devices: { requests: [request] } } } }
  )
  await kube.create(
    { apiVersion: dra, resource: 'resourceslices' },
    {
      metadata: { name: 'gpu-host-a-gpu' },
      spec: {
        driver: 'gpu.kubeswift.io',
        allNodes: true,
        pool: { name: 'gpu-host-a', generation: 1, resourceSliceCount: 1 },
        devices: [{ name: 'gpu-0000-3b-00-0', attributes: { vfioReady: { bool: true } } }]
      }
    }
  )
  // Another tenant's VM holds the only device.
  await cluster.kubectl(['create', 'namespace', 'other-team'])
  const claimRef: ResourceRef = { apiVersion: dra, resource: 'resourceclaims', namespace: 'other-team', name: 'vm' }
  const created = await kube.create(claimRef, {
    metadata: { name: 'vm', namespace: 'other-team' },
    spec: { devices: { requests: [request] } }
  })
  const results = [{ request: 'gpu', driver: 'gpu.kubeswift.io', pool: 'gpu-host-a', device: 'gpu-0000-3b-00-0' }]
  await kube.updateStatus(claimRef, { ...created.body, status: { allocation: { devices: { results } } } })

  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pool(1, name)) })
  const waiting = await until('the check to hold the cell back', (p) => condition(p, 'PhysicalGPUsAvailable')?.status === 'False', {
    seconds: 40,
    name
  })
  t.match(condition(waiting, 'PhysicalGPUsAvailable'), {
    reason: 'InsufficientPhysicalGPU',
    message: /^1 more cell\(s\) wait .*: 0 free of 1 ready \(1 published, 1 held\) device\(s\) of driver gpu\.kubeswift\.io\.$/
  })
  t.same([waiting.status.desiredReplicas, waiting.status.replicas], [1, 0])
  t.same(
    (await guests()).filter((g: Obj) => String(g.metadata.name).startsWith(`${name}-`)),
    [],
    'no guest that could only wait in AllocatingGPU'
  )
  await kube.delete(claimRef)
  const ready = await until('the cell once the GPU is free', (p) => p.status?.readyCells === 1, { seconds: 60, name })
  t.same(phases(ready), ['scarce-0:Ready'])
  t.equal(condition(ready, 'PhysicalGPUsAvailable')?.status, 'True')
})
