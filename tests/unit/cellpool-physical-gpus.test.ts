/**
 * The scale-up check for free physical GPUs (docs/cellpool.md, "Free physical GPUs"): the agent's
 * summary of the DRA inventory and how the hook reads it, the `PhysicalGPUsAvailable` condition, and a world
 * in which KubeSwift gives a guest a GPU only while one is free.
 */
import t from 'tap'
import fc from 'fast-check'
import { sync, customize } from '../../hooks/cellpool/hooks.ts'
import { draInventory, GPU_DRIVER } from '../../hooks/cellpool/request/inventory.ts'
import { freeForPool, poolInventory } from '../../hooks/cellpool/plan/physical-gpus.ts'
import { summarizePhysicalGpus } from '../../hooks/agent/nodeset/physical-gpus.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import { buildApp } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { NS, joinSecret, poolObject, poolSpec, request, T0 } from './fixtures/cellpool.ts'
import { GPUWorld, claim, claimTemplate, gpuSlice, relatedMap, RELATED_TYPES } from './fixtures/dra-inventory.ts'
import type { ResolvedDra } from '../../hooks/cellpool/model/resolved-pool.ts'

const TEMPLATE: ResolvedDra = {
  claim: { kind: 'resourceClaimTemplateName', name: 'single-vfio-gpu' },
  requestName: 'gpu',
  tier: 'pcie',
  hugepages: ''
}
const SHARED: ResolvedDra = { ...TEMPLATE, claim: { kind: 'resourceClaimName', name: 'shared' } }
const HOST = 'gpu-host-1'

/** The agent's counts of `objects` for a pool of `dra` (hooks/agent/nodeset/physical-gpus.ts). */
const counts = (objects: KubeObject[], dra = TEMPLATE) =>
  summarizePhysicalGpus(
    objects.filter((o) => o.kind === 'ResourceSlice'),
    objects.filter((o) => o.kind === 'ResourceClaim'),
    { driver: GPU_DRIVER, ...(dra.claim.kind === 'resourceClaimName' ? { claimName: dra.claim.name } : {}) },
    NS
  )
/** A fresh summary of `objects`, as the agent writes it. */
const summary = (objects: KubeObject[], dra = TEMPLATE, at = T0) => ({
  observedTime: at.toISOString().replace(/\.\d{3}Z$/, 'Z'),
  ...counts(objects, dra)
})

t.test('the agent counts the driver devices: published, ready, held by any namespace', async (t) => {
  const objects = [
    gpuSlice(HOST, ['a', 'b', 'c', 'd'], ['d']),
    // The same device published twice counts once; another driver's devices do not count.
    gpuSlice('gpu-host-1-again', []),
    { ...gpuSlice(HOST, ['a']), metadata: { name: 'duplicate' } },
    gpuSlice('cpu-host', ['x', 'y'], [], 'other.example.com'),
    claim('team-a', 'vm-1', [[HOST, 'a']]),
    claim('team-b', 'vm-2', [
      [HOST, 'a'],
      [HOST, 'b']
    ]),
    // Not allocated, another driver's result, an unready device, an unknown device: not held.
    claim('team-c', 'pending', []),
    claim('team-c', 'other', [[HOST, 'c']], 'other.example.com'),
    claim('team-c', 'unready', [[HOST, 'd']]),
    claim('team-c', 'ghost', [[HOST, 'zz']])
  ]
  t.same(counts(objects), { published: 4, ready: 3, held: 2, own: 0 })
  const related = relatedMap([claimTemplate()])
  t.same(draInventory(related, NS, TEMPLATE, summary(objects), T0), { known: true, published: 4, ready: 3, held: 2, free: 1, own: 0 })
  const qualified = gpuSlice(HOST, ['a'])
  ;(qualified.spec as { devices: Array<{ attributes: unknown }> }).devices[0]!.attributes = {
    'gpu.kubeswift.io/vfioReady': { bool: false }
  }
  t.match(counts([qualified]), { published: 1, ready: 0 }, 'a qualified attribute name counts')
  const bare = gpuSlice(HOST, ['a'])
  ;(bare.spec as { devices: Array<{ attributes?: unknown }> }).devices[0]!.attributes = undefined
  t.match(counts([bare]), { ready: 1 }, 'no attribute: ready')
})

t.test("a shared claim's devices are the pool's own", async (t) => {
  const objects = [gpuSlice(HOST, ['a', 'b']), claim(NS, 'shared', [[HOST, 'a']]), claim('elsewhere', 'shared', [[HOST, 'b']])]
  t.same(draInventory(relatedMap([claim(NS, 'shared', [])]), NS, SHARED, summary(objects, SHARED), T0), {
    known: true,
    published: 2,
    ready: 2,
    held: 2,
    free: 0,
    own: 1
  })
})

t.test('a missing or stale summary waits; what a fresh one cannot say is unknown, never full', async (t) => {
  const devices = [gpuSlice(HOST, ['a'])]
  const got = (related: unknown, s: unknown, dra = TEMPLATE) => draInventory(related as never, NS, dra, s as never, T0)
  const reason = (related: unknown, s: unknown = summary(devices), dra = TEMPLATE): string | undefined => {
    const inventory = got(related, s, dra)
    return inventory.known ? undefined : inventory.reason
  }
  t.match(got(relatedMap([claimTemplate()]), undefined), { known: false, reason: 'InventoryNotObserved', wait: true })
  const old = summary(devices, TEMPLATE, new Date(T0.getTime() - 121_000))
  t.match(got(relatedMap([claimTemplate()]), old), { known: false, reason: 'InventoryStale', wait: true })
  t.match(got(relatedMap([claimTemplate()]), summary(devices, TEMPLATE, new Date(T0.getTime() - 119_000))), { known: true })
  t.equal(freeForPool(got(relatedMap([claimTemplate()]), undefined)), 0, 'a missing summary leaves no device free')
  t.equal(reason(relatedMap([])), 'ClaimTemplateNotObserved')
  t.equal(reason(null), 'ClaimTemplateNotObserved')
  t.equal(reason(relatedMap([claimTemplate()]), summary([])), 'NoDevicesPublished')
  t.equal(freeForPool(got(relatedMap([claimTemplate()]), summary([]))), undefined, 'no device published: nothing held back')
  const selectors = [{ cel: { expression: 'device.attributes["gpu.kubeswift.io"].model == "A100"' } }]
  const exactly = claimTemplate({ name: 'gpu', exactly: { deviceClassName: 'vfio-gpu', selectors } })
  t.equal(reason(relatedMap([exactly])), 'RequestConstrained')
  const first = claimTemplate({ name: 'gpu', firstAvailable: [{ name: 'a100', deviceClassName: 'vfio-gpu', selectors }] })
  t.equal(reason(relatedMap([first])), 'RequestConstrained')
  const shared = claim(NS, 'shared', [])
  ;(shared.spec as { devices: { requests: unknown[] } }).devices.requests = [{ name: 'gpu', exactly: { deviceClassName: 'x', selectors } }]
  t.equal(reason(relatedMap([shared]), summary(devices, SHARED), SHARED), 'RequestConstrained')
  const native = resolvePool(
    poolSpec({ cell: { ...(poolSpec().cell as object), gpu: { backend: 'Native', native: { gpuProfileRef: { name: 'a100' } } } } })
  )
  t.match(poolInventory(relatedMap([]), NS, native, undefined, T0), { known: false, reason: 'NativeBackend' })
})

t.test('customize relates only the join Secret and the claim a DRA pool asks with', async (t) => {
  const rules = (spec: Record<string, unknown>) => customize({ controller: {}, parent: poolObject(spec) }).relatedResources
  t.same(rules(poolSpec()).slice(1), [
    { apiVersion: 'resource.k8s.io/v1', resource: 'resourceclaimtemplates', namespace: NS, names: ['single-vfio-gpu'] }
  ])
  const cell = poolSpec().cell as Record<string, unknown>
  t.same(rules(poolSpec({ cell: { ...cell, gpu: { backend: 'DRA', dra: { resourceClaimName: 'shared' } } } })).slice(1), [
    { apiVersion: 'resource.k8s.io/v1', resource: 'resourceclaims', namespace: NS, names: ['shared'] }
  ])
  t.same(rules(poolSpec({ cell: { ...cell, gpu: { backend: 'Native', native: { gpuProfileRef: { name: 'a100' } } } } })).slice(1), [])
})

t.test('the CellNodeSet asks the agent for the summary of a DRA pool only', async (t) => {
  const world = new GPUWorld(poolSpec({ replicas: 1 }), 1)
  world.step(sync)
  t.same((world.cellNodeSet()?.spec as { physicalGPUs?: unknown }).physicalGPUs, { driver: 'gpu.kubeswift.io' })
  const cell = poolSpec().cell as Record<string, unknown>
  const shared = new GPUWorld(
    poolSpec({ replicas: 1, cell: { ...cell, gpu: { backend: 'DRA', dra: { resourceClaimName: 'shared' } } } }),
    1
  )
  shared.step(sync)
  t.same((shared.cellNodeSet()?.spec as { physicalGPUs?: unknown }).physicalGPUs, { driver: 'gpu.kubeswift.io', claimName: 'shared' })
})

t.test('without a summary, or with a stale one, no machine is built; a fresh one lets the build go on', async (t) => {
  for (const [name, change] of [
    ['no summary', (w: GPUWorld) => (w.summarizes = false)],
    ['a stale summary', (w: GPUWorld) => (w.summaryAgeSeconds = 180)]
  ] as const) {
    const world = new GPUWorld(poolSpec({ replicas: 2 }), 2)
    change(world)
    for (let i = 0; i < 6; i++) world.step(sync, 10)
    t.same(world.guests(), [], `${name}: no guest`)
    t.match(conditionOf(world), { status: 'Unknown', message: /wait to be created until it does\.$/ }, name)
    world.summarizes = true
    world.summaryAgeSeconds = 0
    world.settle(sync)
    t.same(phases(world), ['inference-0:Ready', 'inference-1:Ready'], `${name}, then a fresh one: built`)
  }
})

const conditionOf = (world: GPUWorld, type = 'PhysicalGPUsAvailable') => world.condition(type)
const phases = (world: GPUWorld) => world.cells().map((c) => `${c.name}:${c.phase}`)

t.test('too few free GPUs: the scale-up waits, no cell waits in AllocatingGPU for it', async (t) => {
  const world = new GPUWorld(poolSpec({ replicas: 3 }), 2)
  world.settle(sync)
  t.same(phases(world), ['inference-0:Ready', 'inference-1:Ready'])
  t.same(
    world.guests().map((g) => g.metadata.name),
    ['inference-0', 'inference-1'],
    'no third guest'
  )
  t.match(conditionOf(world), {
    status: 'False',
    reason: 'InsufficientPhysicalGPU',
    message:
      '1 more cell(s) wait to be created until a physical GPU is free: 0 free of 2 ready (2 published, 2 held) device(s) of driver gpu.kubeswift.io.'
  })
  t.match(world.condition('Progressing'), { status: 'False', reason: 'InsufficientPhysicalGPU' })
  t.equal((world.parent.status as { desiredReplicas: number }).desiredReplicas, 3, 'the desired number stays')
  world.addGPU()
  world.settle(sync)
  t.same(phases(world), ['inference-0:Ready', 'inference-1:Ready', 'inference-2:Ready'], 'a freed GPU lets the scale-up go on')
  t.match(conditionOf(world), { status: 'True', reason: 'FreeDevices', message: /^0 free of 3 ready \(3 published, 3 held\)/ })
})

t.test('a manual increase builds only as many cells as there are free GPUs', async (t) => {
  const world = new GPUWorld(poolSpec({ replicas: 1 }), 3)
  world.settle(sync)
  world.takeGPUs(1)
  world.edit((spec) => (spec.replicas = 4))
  world.settle(sync)
  t.same(phases(world), ['inference-0:Ready', 'inference-1:Ready'])
  t.ok(
    world.cells().every((c) => c.phase !== 'AllocatingGPU'),
    'no cell in AllocatingGPU'
  )
  t.match(conditionOf(world), { status: 'False', message: /^2 more cell\(s\) wait .* 0 free of 3 ready \(3 published, 3 held\)/ })
})

t.test('an autoscaling scale-up waits for a free GPU and is not forgotten', async (t) => {
  const world = new GPUWorld(poolSpec({ replicas: 1, autoscaling: { enabled: true, minReplicas: 1, maxReplicas: 3 } }), 1)
  world.settle(sync)
  world.demand = { read: true, pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 1024, cores: 10, pods: 1 }] }
  world.settle(sync)
  t.same(phases(world), ['inference-0:Ready'], 'no cell without a GPU')
  t.equal((world.parent.status as { desiredReplicas: number }).desiredReplicas, 2, 'the autoscaler wants one more')
  t.match(conditionOf(world), { status: 'False', reason: 'InsufficientPhysicalGPU' })
  world.addGPU()
  world.settle(sync)
  t.same(phases(world), ['inference-0:Ready', 'inference-1:Ready'])
})

t.test('cells that exist are never touched: another tenant taking every free GPU changes no child', async (t) => {
  const world = new GPUWorld(poolSpec(), 3)
  world.settle(sync)
  // The agent's observation time moves on every pass; everything the hook answers stays.
  const answered = () => world.children().map((c) => (c.kind === 'CellNodeSet' ? { ...c, status: undefined } : c))
  const before = answered()
  world.takeGPUs(1)
  world.settle(sync)
  t.same(answered(), before, 'every child as it was')
  t.match(conditionOf(world), { status: 'True', message: /^0 free of 3 ready \(3 published, 3 held\)/ }, 'nothing wanted: not False')
})

t.test('a replacement waits for a free GPU too', async (t) => {
  const world = new GPUWorld(poolSpec({ replicas: 1 }), 1)
  world.noJoin.add('inference-0')
  world.settle(sync)
  // The cell never joins: its budget runs out, it fails and goes, and its GPU is freed.
  for (let i = 0; i < 30 && !world.cells().some((c) => c.phase === 'Failed'); i++) world.step(sync, 60)
  t.match(world.cells(), [{ name: 'inference-0', phase: 'Failed' }])
  for (let i = 0; i < 6 && world.guests().length > 0; i++) world.step(sync, 1)
  t.same(world.guests(), [], 'the failed guest is gone')
  world.takeGPUs(1)
  world.noJoin.clear()
  for (let i = 0; i < 10; i++) world.step(sync, 60)
  t.same(world.guests(), [], 'not rebuilt while no GPU is free')
  t.match(conditionOf(world), { status: 'False', reason: 'InsufficientPhysicalGPU' })
  world.addGPU()
  world.settle(sync)
  t.same(phases(world), ['inference-0:Ready'], 'rebuilt once one is')
})

t.test('a device taken between the build and its machine: the machine waits, its cell stays Pending', async (t) => {
  const world = new GPUWorld(poolSpec({ replicas: 1 }), 1)
  for (let i = 0; i < 10 && world.of('Secret.v1').length === 0; i++) world.step(sync)
  t.same(world.guests(), [], 'the Secret and seed profile come first')
  world.takeGPUs(1)
  for (let i = 0; i < 5; i++) world.step(sync)
  t.same(world.guests(), [], 'no machine while no device is free')
  t.match(world.cells(), [{ name: 'inference-0', phase: 'Pending', message: /^Waiting for a free physical GPU/ }])
  t.match(conditionOf(world), { status: 'False', reason: 'InsufficientPhysicalGPU' })
  world.otherClaims = []
  world.settle(sync)
  t.same(phases(world), ['inference-0:Ready'])
})

t.test("a cell that holds its GPU counts as its own: a shared claim's device is free for the pool", async (t) => {
  const cell = poolSpec().cell as Record<string, unknown>
  const spec = poolSpec({ replicas: 1, cell: { ...cell, gpu: { backend: 'DRA', dra: { resourceClaimName: 'shared' } } } })
  const world = new GPUWorld(spec, 1)
  world.template = claim(NS, 'shared', [])
  world.otherClaims = [claim(NS, 'shared', [[HOST, 'gpu-0000-0']])]
  for (let i = 0; i < 6; i++) world.step(sync, 10)
  t.ok(
    world.of('Secret.v1').some((c) => c.metadata.name === 'inference-0-bootstrap'),
    'the cell is built'
  )
  t.match(conditionOf(world), { status: 'True', message: /1 held by this pool's claim/ })
})

t.test('with the inventory unknown the pool behaves as without the check', async (t) => {
  for (const [name, change] of [
    ['no devices published', (w: GPUWorld) => (w.slices = [])],
    ['claim template not observed', (w: GPUWorld) => (w.template = undefined)],
    [
      'a constrained request',
      (w: GPUWorld) => (w.template = claimTemplate({ name: 'gpu', exactly: { deviceClassName: 'v', selectors: [{}] } }))
    ]
  ] as const) {
    const world = new GPUWorld(poolSpec({ replicas: 3 }), 0)
    change(world)
    world.step(sync)
    world.step(sync)
    const answer = world.step(sync)
    t.equal(answer.children.filter((c) => c.kind === 'Secret').length, 3, `${name}: every desired cell is built`)
    t.match(conditionOf(world), { status: 'Unknown', message: /Scale-ups are not held back\.$/ }, name)
  }
})

/** One thing that happens to a pool whose infrastructure cluster is short of GPUs. */
type GPUEvent =
  | { kind: 'replicas'; n: number }
  | { kind: 'take'; n: number }
  | { kind: 'release' }
  | { kind: 'add' }
  | { kind: 'template'; image: string }

const gpuEvent: fc.Arbitrary<GPUEvent> = fc.oneof(
  fc.record({ kind: fc.constant('replicas' as const), n: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ kind: fc.constant('take' as const), n: fc.integer({ min: 1, max: 2 }) }),
  fc.record({ kind: fc.constant('release' as const) }),
  fc.record({ kind: fc.constant('add' as const) }),
  fc.record({ kind: fc.constant('template' as const), image: fc.constantFrom('gpu-noble', 'gpu-noble-2') })
)

t.test('over any history of scaling, updates and other tenants, no guest is ever left waiting for a GPU', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 }), fc.array(gpuEvent, { maxLength: 8 }), (gpus, events) => {
        // At least one device is published: a driver that publishes none says nothing (unknown, never full).
        const world = new GPUWorld(poolSpec({ replicas: 2, updatePolicy: { type: 'RollingUpdate' } }), gpus)
        const check = (): void => {
          const waiting = world.guests().filter((g) => (g.status as { gpu?: unknown } | undefined)?.gpu === undefined)
          if (waiting.length > 0)
            throw new Error(`guests wait for a GPU: ${waiting.map((g) => g.metadata.name).join(', ')} after ${JSON.stringify(events)}`)
        }
        for (const e of events) {
          if (e.kind === 'replicas') world.edit((spec) => (spec.replicas = e.n))
          else if (e.kind === 'take') world.takeGPUs(e.n)
          else if (e.kind === 'release') world.otherClaims = []
          else if (e.kind === 'add') world.addGPU()
          else world.edit((spec) => ((spec.cell as { guestTemplate: { imageRef: unknown } }).guestTemplate.imageRef = { name: e.image }))
          for (let i = 0; i < 6; i++) {
            world.step(sync, 10)
            check()
          }
        }
        // With every GPU given back and enough of them, the pool reaches its size.
        world.otherClaims = []
        while (world.freeDevices().length + world.guestClaims.size < 4) world.addGPU()
        world.settle(sync, 120)
        check()
        const desired = (world.parent.spec as { replicas: number }).replicas
        if (world.cells().filter((c) => c.phase === 'Ready').length !== desired)
          throw new Error(`not at ${desired}: ${JSON.stringify(world.cells())}`)
      }),
      { numRuns: 40 }
    )
  )
})

t.test('objects and summaries of any shape: no throw, bounded counts, the hook answers', async (t) => {
  const anyObject = fc.record(
    {
      kind: fc.constantFrom('ResourceSlice', 'ResourceClaim'),
      metadata: fc.record({ name: fc.string(), namespace: fc.option(fc.string(), { nil: undefined }) }),
      spec: fc.anything(),
      status: fc.anything()
    },
    { requiredKeys: ['metadata', 'kind'] }
  )
  fc.assert(
    fc.property(fc.array(anyObject, { maxLength: 8 }), fc.anything(), (objects, odd) => {
      const c = counts(objects, SHARED)
      if (!(c.ready <= c.published && c.held <= c.ready && c.own <= c.held)) throw new Error(JSON.stringify(c))
      const got = draInventory(relatedMap([claimTemplate()]), NS, TEMPLATE, summary(objects), T0)
      if (got.known && !(got.free >= 0 && got.free <= got.ready)) throw new Error(JSON.stringify(got))
      draInventory({ [RELATED_TYPES[2]]: odd } as never, NS, TEMPLATE, odd as never, T0)
      sync({ ...request(), related: { [RELATED_TYPES[2]]: odd } as never }, T0)
    }),
    { numRuns: 300 }
  )
  const app = await buildApp({ routes, clock: () => T0 })
  t.teardown(() => app.close())
  const odd = {
    ...request(),
    related: { ...relatedMap([joinSecret()]), [RELATED_TYPES[2]]: { x: { metadata: { name: 'x' }, spec: 'many' } } }
  }
  const res = await app.inject({ method: 'POST', url: '/hooks/cellpool/sync', payload: odd as never })
  t.equal(res.statusCode, 200, 'odd related objects answer 200')
  t.ok(JSON.stringify(res.json()).includes('PhysicalGPUsAvailable'))
})
