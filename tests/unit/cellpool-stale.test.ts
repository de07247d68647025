/**
 * The cellpool hooks under a stale cache (docs/cellpool.md, "Witnesses"): Metacontroller can hand
 * a sync the pool as it was before its last status write, together with the children that write's
 * answer applied. Each test plays that sync and checks that nothing is destroyed or doubled; and
 * that an entry a tenant forged can at worst delay.
 */
import t from 'tap'
import { sync, finalize } from '../../hooks/cellpool/hooks.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { GUEST_KEY, PoolWorld, SECRET_KEY, poolSpec } from './fixtures/cellpool.ts'

type Entry = { name: string; instance?: string; cordon?: boolean; readyOnce?: boolean }

const entries = (world: PoolWorld): Entry[] => (world.cellNodeSet()?.spec as { nodes?: Entry[] }).nodes ?? []
const entry = (world: PoolWorld, name: string): Entry | undefined => entries(world).find((e) => e.name === name)
const row = (world: PoolWorld, name: string) => world.cells().find((c) => c.name === name)
const deleted = (world: PoolWorld, kind = GUEST_KEY): string[] =>
  world.operations.filter((o) => o.startsWith(`delete ${kind} `)).map((o) => o.split('/').at(-1) ?? '')
const created = (world: PoolWorld, kind: string): string[] =>
  world.operations.filter((o) => o.startsWith(`create ${kind} `)).map((o) => o.split('/').at(-1) ?? '')

/** A pool of two cells, stepped until the sync that first records cell 1 as Ready has written its status. */
function firstReady(spec = poolSpec({ replicas: 2 })): PoolWorld {
  const world = new PoolWorld(spec)
  for (let i = 0; i < 60 && row(world, 'inference-1')?.readyOnce !== true; i++) world.step(sync)
  if (row(world, 'inference-1')?.readyOnce !== true) throw new Error('cell 1 never became Ready')
  return world
}

/** Cell 1's Node turns NotReady and the agent reports it. */
function nodeNotReady(world: PoolWorld, name = 'inference-1'): void {
  const node = world.nodes.get(name)
  if (node === undefined) throw new Error(`no Node ${name}`)
  node.ready = false
  world.agent()
}

t.test('the entry of a machine once Ready records it, and only for that machine', async (t) => {
  const world = firstReady()
  const guest = world.guests().find((g) => g.metadata.name === 'inference-1') as KubeObject
  t.same(entry(world, 'inference-1'), { ...entry(world, 'inference-1'), instance: guest.metadata.uid, readyOnce: true })
  t.equal(row(world, 'inference-1')?.readyOnce, true)
})

t.test('a stale pool with fresh children still drains a cell once Ready whose Node turned NotReady', async (t) => {
  const world = firstReady()
  nodeNotReady(world)
  // The user scales down between the read and the status write of the sync that saw the Ready;
  // the next sync gets that pool: the new spec, the status before the Ready.
  world.edit((s) => {
    s.replicas = 1
  })
  world.staleNext = true
  t.equal(
    (world.request().parent.status as { cells: Array<{ name: string; readyOnce: boolean }> }).cells.find((c) => c.name === 'inference-1')
      ?.readyOnce,
    false,
    'the request is stale: its status has not seen the Ready'
  )
  world.pass(sync)
  t.same(deleted(world), [], 'no guest deleted')
  t.same([row(world, 'inference-1')?.phase, row(world, 'inference-1')?.reason], ['Draining', 'ScaleDown'])
  t.equal(row(world, 'inference-1')?.readyOnce, true)
  t.equal(entry(world, 'inference-1')?.cordon, true, 'cordoned')
})

t.test('finalize from a stale pool drains a cell once Ready instead of deleting it', async (t) => {
  const world = firstReady()
  nodeNotReady(world)
  world.parent.metadata.deletionTimestamp = '2026-03-01T10:00:00Z'
  world.staleNext = true
  world.pass(finalize, true)
  t.same(deleted(world), [], 'no guest deleted')
  t.equal(row(world, 'inference-1')?.phase, 'Draining')
})

t.test('a stale drain: the entry remembers the cordon, and the drain goes on', async (t) => {
  const world = new PoolWorld(poolSpec({ replicas: 2 }))
  world.settle(sync)
  world.edit((s) => {
    s.replicas = 1
  })
  world.step(sync)
  t.equal(row(world, 'inference-1')?.phase, 'Draining')
  // The next sync gets the pool before the drain's status write, with the spec scaled down.
  world.staleNext = true
  world.pass(sync)
  t.same([row(world, 'inference-1')?.phase, entry(world, 'inference-1')?.cordon], ['Draining', true], 'still draining, still cordoned')
  // Stepped rather than settled: a drain waits out its 30 s without writing.
  for (let i = 0; i < 8; i++) world.step(sync)
  t.same(
    world.guests().map((g) => g.metadata.name),
    ['inference-0'],
    'the drain completed'
  )
})

const AUTOSCALING = { enabled: true, minReplicas: 1, maxReplicas: 3, scaleDown: 'Auto', stabilizationWindow: '10m' }
const ONE_POD = { read: true, pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 8192, cores: 30, pods: 1 }] }

t.test('one pending Pod grows an autoscaling pool by one cell, a stale sync after the scale-up included', async (t) => {
  const world = new PoolWorld(poolSpec({ replicas: 1, autoscaling: AUTOSCALING }))
  world.settle(sync)
  world.demand = structuredClone(ONE_POD)
  world.agent()
  world.pass(sync)
  t.same([world.condition('ScalingActive')?.reason, (world.parent.status as { desiredReplicas: number }).desiredReplicas], ['ScaledUp', 2])
  t.same(created(world, SECRET_KEY), ['inference-1-bootstrap'])
  // The sync the new Secret triggers starts from the pool before the scale-up's status write
  // (desiredReplicas 1, no lastScaleUpTime), with the new cell's Secret already there.
  world.staleNext = true
  const stale = world.request().parent.status as { desiredReplicas: number; lastScaleUpTime?: string }
  t.same([stale.desiredReplicas, stale.lastScaleUpTime], [1, undefined], 'the request is stale')
  world.pass(sync)
  t.equal((world.parent.status as { desiredReplicas: number }).desiredReplicas, 2, 'still two')
  t.same(created(world, SECRET_KEY), [], 'no third cell')
  t.same(deleted(world, SECRET_KEY), [], 'the new cell is kept')
  // The world goes on with the Pod still pending after the new cell is Ready (the scheduler has
  // yet to place it): the window the stale sync's status kept holds, two cells in all.
  for (let i = 0; i < 30 && row(world, 'inference-1')?.phase !== 'Ready'; i++) world.step(sync)
  t.equal(row(world, 'inference-1')?.phase, 'Ready')
  for (let i = 0; i < 10; i++) world.step(sync)
  t.same(
    world.guests().map((g) => g.metadata.name),
    ['inference-0', 'inference-1']
  )
  t.type((world.parent.status as { lastScaleUpTime?: string }).lastScaleUpTime, 'string', 'the stale sync restored the scale-up time')
})

t.test('a stale sync after a scale-down drains no second cell', async (t) => {
  const world = new PoolWorld(poolSpec({ replicas: 1, autoscaling: { ...AUTOSCALING, scaleDownStabilizationWindow: '1m' } }))
  world.settle(sync)
  world.demand = structuredClone(ONE_POD)
  world.agent()
  world.step(sync)
  world.demand = { ...structuredClone(ONE_POD), shapes: [{ devices: 1, memoryMiB: 8192, cores: 30, pods: 2 }], pendingPods: 2 }
  world.advance(700)
  world.settle(sync)
  t.equal(world.guests().length, 3, 'three cells after two scale-ups')
  world.demand = { read: true, pendingPods: 0, shapes: [] }
  world.agent()
  world.step(sync)
  world.advance(120)
  world.agent()
  world.pass(sync)
  t.equal(world.condition('ScalingActive')?.reason, 'ScaledDown')
  t.same(
    world
      .cells()
      .filter((c) => c.phase === 'Draining')
      .map((c) => c.name),
    ['inference-2']
  )
  world.staleNext = true
  world.pass(sync)
  t.same(
    world
      .cells()
      .filter((c) => c.phase === 'Draining')
      .map((c) => c.name),
    ['inference-2'],
    'the stale sync drains the same cell, no second one'
  )
})

t.test('a forged entry can only delay', async (t) => {
  t.test('readyOnce on a never-Ready cell: drained instead of removed, nothing deleted', async (t) => {
    const world = new PoolWorld(poolSpec({ replicas: 2 }))
    for (let i = 0; i < 60 && world.guests().length < 2; i++) world.step(sync)
    const guest = world.guests().find((g) => g.metadata.name === 'inference-1') as KubeObject
    world.nodes.delete('inference-1')
    world.booted.delete(guest.metadata.uid ?? '')
    // No kubelet ever registers: cell 1 waits in Joining.
    world.joinNodes = () => undefined
    world.agent()
    world.step(sync)
    t.equal(row(world, 'inference-1')?.readyOnce, false)
    const e = entry(world, 'inference-1') as Entry
    e.readyOnce = true
    world.edit((s) => {
      s.replicas = 1
    })
    world.pass(sync)
    t.same(deleted(world), [], 'not removed at once')
    t.equal(row(world, 'inference-1')?.phase, 'Draining')
  })
  t.test('a cordon on a cell the pool needs: it serves again in the same answer', async (t) => {
    const world = new PoolWorld(poolSpec({ replicas: 2 }))
    world.settle(sync)
    const e = entry(world, 'inference-1') as Entry
    e.cordon = true
    world.pass(sync)
    t.same(deleted(world), [])
    t.equal(entry(world, 'inference-1')?.cordon, false, 'uncordoned')
    t.equal(row(world, 'inference-1')?.phase, 'Ready')
  })
  t.test("an entry naming another machine witnesses nothing; removing the witness leaves the status's memory", async (t) => {
    const world = firstReady()
    nodeNotReady(world)
    const e = entry(world, 'inference-1') as Entry
    e.instance = 'another-machine'
    world.edit((s) => {
      s.replicas = 1
    })
    world.pass(sync)
    t.same(deleted(world), [], 'the fresh status still remembers the Ready: drained')
    t.equal(row(world, 'inference-1')?.phase, 'Draining')
    t.equal(entry(world, 'inference-1')?.readyOnce, true, 'the next answer writes the witness again')
  })
  t.test('forged entries on a settled pool whose spec is unchanged never delete a machine', async (t) => {
    for (const forge of [
      (e: Entry) => Object.assign(e, { readyOnce: true, cordon: true }),
      (e: Entry) => Object.assign(e, { readyOnce: false, cordon: false }),
      (e: Entry) => Object.assign(e, { instance: '' }),
      (e: Entry) => Object.assign(e, { cordon: true, instance: 'x' })
    ]) {
      const world = new PoolWorld(poolSpec({ replicas: 2 }))
      world.settle(sync)
      for (const e of entries(world)) forge(e)
      for (let i = 0; i < 10; i++) {
        world.staleNext = i % 3 === 0
        world.step(sync, 30)
        t.same(deleted(world), [], `step ${i}`)
      }
      t.equal(world.guests().length, 2)
    }
  })
})
