/**
 * Deleting a pool (docs/cellpool.md, "finalize"): deletion.policy Drain and Force, drainTimeout from
 * the pool's deletionTimestamp, guests first, then seed profiles, Secrets and the CellNodeSet,
 * finalized only when nothing is observed.
 */
import t from 'tap'
import { finalize } from '../../hooks/cellpool/finalize.ts'
import { sync } from '../../hooks/cellpool/sync.ts'
import type { CompositeResponse } from '../../hooks/metacontroller/schemas.ts'
import { PoolWorld, poolSpec } from './fixtures/cellpool.ts'

const kinds = (a: CompositeResponse): string[] => a.children.map((c) => `${c.kind}/${c.metadata.name}`).sort()

/** Two Ready cells, inference-1 with a Pod using its GPU; then the pool is deleted. */
function deletedWorld(extra: Record<string, unknown> = {}): PoolWorld {
  const world = new PoolWorld(poolSpec(extra))
  world.settle(sync)
  const node = world.nodes.get('inference-1')
  if (node !== undefined) node.pods = 1
  world.agent()
  world.parent.metadata.deletionTimestamp = world.now.toISOString().replace(/\.\d{3}Z$/, 'Z')
  return world
}

function teardown(world: PoolWorld, steps: number): CompositeResponse[] {
  const answers: CompositeResponse[] = []
  for (let i = 0; i < steps; i++) {
    answers.push(world.pass(finalize, true))
    world.stopDeadKubelets()
    world.agent()
    world.advance(10)
  }
  return answers
}

t.test('Drain: an empty cell goes after 30 s, a busy one stays cordoned', async (t) => {
  const world = deletedWorld()
  const [first] = teardown(world, 1)
  t.equal(first?.finalized, false)
  t.same(
    world.cells().map((c) => [c.name, c.phase, c.reason]),
    [
      ['inference-0', 'Draining', 'PoolDeleting'],
      ['inference-1', 'Draining', 'PoolDeleting']
    ]
  )
  const entries = (world.cellNodeSet()?.spec as { nodes: Array<{ name: string; cordon: boolean }> }).nodes
  t.same(
    entries.map((n) => [n.name, n.cordon]),
    [
      ['inference-0', true],
      ['inference-1', true]
    ],
    'every Ready cell cordoned'
  )
  teardown(world, 4)
  t.same(
    world.guests().map((g) => g.metadata.name),
    ['inference-1'],
    'the empty cell went, the busy one stays'
  )
  t.ok(
    world.of('Secret.v1').some((s) => s.metadata.name === 'inference-0-bootstrap'),
    'Secrets wait while a guest is observed'
  )
  const node = world.nodes.get('inference-1')
  if (node !== undefined) node.pods = 0
  const rest = teardown(world, 5)
  t.same(world.children(), [], 'everything is gone')
  t.equal(rest.at(-1)?.finalized, true)
})

t.test("Drain: drainTimeout after the pool's deletion deletes a busy cell", async (t) => {
  const world = deletedWorld({ deletion: { policy: 'Drain', drainTimeout: '2m' } })
  teardown(world, 6)
  t.same(
    world.guests().map((g) => g.metadata.name),
    ['inference-1'],
    'within the timeout the busy cell stays'
  )
  teardown(world, 8)
  t.same(world.guests(), [], 'past 2m it is deleted')
})

t.test('Force deletes every guest at once; the rest once no guest is observed', async (t) => {
  const world = deletedWorld({ deletion: { policy: 'Force' } })
  const [first, second, third] = teardown(world, 3)
  t.notOk(
    first?.children.some((c) => c.kind === 'SwiftGuest'),
    'no guest answered'
  )
  t.same(kinds(first as CompositeResponse), [
    'CellNodeSet/inference',
    'Secret/inference-0-bootstrap',
    'Secret/inference-1-bootstrap',
    'SwiftSeedProfile/inference-0-seed',
    'SwiftSeedProfile/inference-1-seed'
  ])
  t.same(second?.children, [], 'then nothing')
  t.equal(second?.finalized, false, 'not finalized while children are still observed')
  t.equal(third?.finalized, true)
})

t.test('unobserved workload cluster: the timeout alone decides', async (t) => {
  const world = deletedWorld()
  const node = world.nodes.get('inference-1')
  if (node !== undefined) node.pods = 0
  world.agentUp = false
  world.advance(200)
  teardown(world, 3)
  t.equal(world.guests().length, 2, 'nothing deleted before drainTimeout')
  world.advance(600)
  teardown(world, 4)
  t.same(world.children(), [])
})

t.test('a cell that never became Ready goes at once', async (t) => {
  const world = new PoolWorld(poolSpec({ replicas: 1 }))
  for (let i = 0; i < 3; i++) {
    world.pass(sync)
    world.agent()
  }
  t.equal(world.guests().length, 1)
  world.parent.metadata.deletionTimestamp = world.now.toISOString()
  const [first] = teardown(world, 1)
  t.notOk(first?.children.some((c) => c.kind === 'SwiftGuest'))
})

t.test('an invalid spec does not hold the teardown up', async (t) => {
  const world = deletedWorld({ deletion: { policy: 'Force' } })
  world.parent.spec.cell = 'broken'
  teardown(world, 3)
  t.same(world.children(), [])
})

t.test('finalized is true only when nothing is observed', async (t) => {
  const world = new PoolWorld()
  world.parent.metadata.deletionTimestamp = world.now.toISOString()
  t.equal(finalize(world.request(true), world.now).finalized, true)
})
