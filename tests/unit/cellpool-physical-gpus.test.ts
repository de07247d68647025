/**
 * The scale-up check for free physical GPUs (docs/cellpool.md, "Free physical GPUs"): the DRA
 * inventory as the related objects give it, the `PhysicalGPUsAvailable` condition, and a world
 * in which KubeSwift gives a guest a GPU only while one is free.
 */
import t from 'tap'
import fc from 'fast-check'
import { sync, customize } from '../../hooks/cellpool/hooks.ts'
import { draInventory } from '../../hooks/cellpool/request/inventory.ts'
import { poolInventory } from '../../hooks/cellpool/plan/physical-gpus.ts'
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

t.test('the inventory counts the driver devices: published, ready, held by any namespace, free', async (t) => {
  const related = relatedMap([
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
    claim('team-c', 'ghost', [[HOST, 'zz']]),
    claimTemplate()
  ])
  t.same(draInventory(related, NS, TEMPLATE), { known: true, published: 4, ready: 3, held: 2, free: 1, own: 0 })
  const qualified = gpuSlice(HOST, ['a'])
  ;(qualified.spec as { devices: Array<{ attributes: unknown }> }).devices[0]!.attributes = {
    'gpu.kubeswift.io/vfioReady': { bool: false }
  }
  t.match(
    draInventory(relatedMap([qualified, claimTemplate()]), NS, TEMPLATE),
    { published: 1, ready: 0 },
    'a qualified attribute name counts'
  )
  const bare = gpuSlice(HOST, ['a'])
  ;(bare.spec as { devices: Array<{ attributes?: unknown }> }).devices[0]!.attributes = undefined
  t.match(draInventory(relatedMap([bare, claimTemplate()]), NS, TEMPLATE), { ready: 1 }, 'no attribute: ready')
})

t.test("a shared claim's devices are the pool's own", async (t) => {
  const related = relatedMap([gpuSlice(HOST, ['a', 'b']), claim(NS, 'shared', [[HOST, 'a']]), claim('elsewhere', 'shared', [[HOST, 'b']])])
  t.same(draInventory(related, NS, SHARED), { known: true, published: 2, ready: 2, held: 2, free: 0, own: 1 })
})

t.test('what the inventory cannot say is unknown, never full', async (t) => {
  const reason = (related: unknown, dra = TEMPLATE): string | undefined => {
    const got = draInventory(related as never, NS, dra)
    return got.known ? undefined : got.reason
  }
  t.equal(reason({ 'Secret.v1': {} }), 'InventoryNotRelated')
  t.equal(reason(null), 'InventoryNotRelated')
  t.equal(reason(relatedMap([gpuSlice(HOST, ['a'])])), 'ClaimTemplateNotObserved')
  t.equal(reason(relatedMap([claimTemplate()])), 'NoDevicesPublished')
  t.equal(reason(relatedMap([gpuSlice(HOST, ['a'], [], 'other.example.com'), claimTemplate()])), 'NoDevicesPublished')
  const selectors = [{ cel: { expression: 'device.attributes["gpu.kubeswift.io"].model == "A100"' } }]
  const exactly = claimTemplate({ name: 'gpu', exactly: { deviceClassName: 'vfio-gpu', selectors } })
  t.equal(reason(relatedMap([gpuSlice(HOST, ['a']), exactly])), 'RequestConstrained')
  const first = claimTemplate({ name: 'gpu', firstAvailable: [{ name: 'a100', deviceClassName: 'vfio-gpu', selectors }] })
  t.equal(reason(relatedMap([gpuSlice(HOST, ['a']), first])), 'RequestConstrained')
  const shared = claim(NS, 'shared', [])
  ;(shared.spec as { devices: { requests: unknown[] } }).devices.requests = [{ name: 'gpu', exactly: { deviceClassName: 'x', selectors } }]
  t.equal(reason(relatedMap([gpuSlice(HOST, ['a']), shared]), SHARED), 'RequestConstrained')
  const native = resolvePool(
    poolSpec({ cell: { ...(poolSpec().cell as object), gpu: { backend: 'Native', native: { gpuProfileRef: { name: 'a100' } } } } })
  )
  t.match(poolInventory(relatedMap([gpuSlice(HOST, ['a'])]), NS, native), { known: false, reason: 'NativeBackend' })
})

t.test('customize relates the DRA inventory of a DRA pool only', async (t) => {
  const rules = (spec: Record<string, unknown>) => customize({ controller: {}, parent: poolObject(spec) }).relatedResources
  t.same(rules(poolSpec()).slice(1), [
    { apiVersion: 'resource.k8s.io/v1', resource: 'resourceslices' },
    { apiVersion: 'resource.k8s.io/v1', resource: 'resourceclaims' },
    { apiVersion: 'resource.k8s.io/v1', resource: 'resourceclaimtemplates', namespace: NS, names: ['single-vfio-gpu'] }
  ])
  const cell = poolSpec().cell as Record<string, unknown>
  t.same(rules(poolSpec({ cell: { ...cell, gpu: { backend: 'DRA', dra: { resourceClaimName: 'shared' } } } })).slice(1), [
    { apiVersion: 'resource.k8s.io/v1', resource: 'resourceslices' },
    { apiVersion: 'resource.k8s.io/v1', resource: 'resourceclaims' }
  ])
  t.same(rules(poolSpec({ cell: { ...cell, gpu: { backend: 'Native', native: { gpuProfileRef: { name: 'a100' } } } } })).slice(1), [])
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
  const related = relatedMap([joinSecret(), gpuSlice(HOST, ['a']), claim(NS, 'shared', [[HOST, 'a']])])
  const world = new GPUWorld(spec, 0)
  world.settle(sync)
  const answer = sync({ ...world.request(), related }, world.now)
  t.ok(
    answer.children.some((c) => c.kind === 'Secret' && c.metadata.name === 'inference-0-bootstrap'),
    'the cell is built'
  )
  t.match(
    (answer.status.conditions as Array<{ type: string }>).find((c) => c.type === 'PhysicalGPUsAvailable'),
    { status: 'True', message: /1 held by this pool's claim/ }
  )
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

t.test('related objects of any shape: no throw, a bounded inventory', async (t) => {
  const anyObject = fc.record(
    {
      metadata: fc.record({ name: fc.string(), namespace: fc.option(fc.string(), { nil: undefined }) }),
      spec: fc.anything(),
      status: fc.anything()
    },
    { requiredKeys: ['metadata'] }
  )
  fc.assert(
    fc.property(fc.array(anyObject, { maxLength: 8 }), fc.array(anyObject, { maxLength: 8 }), fc.anything(), (slices, claims, odd) => {
      const related: Record<string, unknown> = {
        [RELATED_TYPES[1]]: Object.fromEntries(slices.map((s, i) => [s.metadata.name || `s${i}`, s])),
        [RELATED_TYPES[2]]: Object.fromEntries(claims.map((c, i) => [`${c.metadata.namespace ?? NS}/${c.metadata.name || i}`, c])),
        [RELATED_TYPES[3]]: odd
      }
      const got = draInventory(related as never, NS, TEMPLATE)
      if (got.known) {
        if (!(got.free >= 0 && got.free <= got.ready && got.ready <= got.published && got.held <= got.ready))
          throw new Error(JSON.stringify(got))
      }
      sync({ ...request(), related: related as never }, T0)
    }),
    { numRuns: 300 }
  )
  const proto = JSON.parse(
    '{"ResourceSlice.resource.k8s.io/v1":{"__proto__":{"metadata":{"name":"__proto__"},"spec":{"driver":"gpu.kubeswift.io","pool":{"name":"p"},"devices":[{"name":"a"}]}}},"ResourceClaim.resource.k8s.io/v1":{}}'
  ) as Record<string, unknown>
  t.match(draInventory(proto as never, NS, SHARED), { known: true, published: 1 }, 'an own __proto__ key is an ordinary entry')
  t.equal(({} as Record<string, unknown>).spec, undefined, 'no prototype was written')
  const app = await buildApp({ routes, clock: () => T0 })
  t.teardown(() => app.close())
  const odd = {
    ...request(),
    related: {
      ...relatedMap([joinSecret()]),
      'ResourceSlice.resource.k8s.io/v1': { x: { metadata: { name: 'x' }, spec: { devices: 'many' } } }
    }
  }
  const res = await app.inject({ method: 'POST', url: '/hooks/cellpool/sync', payload: odd as never })
  t.equal(res.statusCode, 200, 'odd related objects answer 200')
  t.ok(JSON.stringify(res.json()).includes('PhysicalGPUsAvailable'))
})
