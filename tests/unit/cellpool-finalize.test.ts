/**
 * Deleting a pool (docs/cellpool.md, "finalize"): deletion.policy Drain and Force, drainTimeout from
 * the pool's deletionTimestamp, guests first, then seed profiles, Secrets and the CellNodeSet,
 * finalized only when nothing is observed.
 */
import t from 'tap'
import { sync, finalize } from '../../hooks/cellpool/hooks.ts'
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

/** The spec moved to ClusterAPI behind admission's back (sync blocks the pool: cellpool-sync's test). */
function toClusterApi(spec: Record<string, unknown>): void {
  const cell = spec.cell as Record<string, unknown>
  cell.provisioner = 'ClusterAPI'
  cell.clusterAPI = { clusterName: 'capi' }
  const { imageRef, guestClassRef, interfaces } = cell.guestTemplate as Record<string, unknown>
  cell.guestTemplate = { imageRef, guestClassRef, interfaces }
}

t.test('provisioner changed past admission: the cells are torn down by the provisioner that made them, drained', async (t) => {
  const world = deletedWorld()
  world.edit(toClusterApi)
  const [first] = teardown(world, 1)
  t.same(
    world.cells().map((c) => [c.name, c.phase]),
    [
      ['inference-0', 'Draining'],
      ['inference-1', 'Draining']
    ],
    'both SwiftGuest cells drain'
  )
  t.notOk(
    first?.children.some((c) => c.kind === 'Machine' || c.kind === 'CellInfrastructure'),
    'nothing of the named provisioner is made'
  )
  teardown(world, 4)
  t.same(
    world.guests().map((g) => g.metadata.name),
    ['inference-1'],
    'the empty cell went; the busy one is not deleted undrained'
  )
  const node = world.nodes.get('inference-1')
  if (node !== undefined) node.pods = 0
  const rest = teardown(world, 5)
  t.same(world.children(), [], 'everything is gone')
  t.equal(rest.at(-1)?.finalized, true)
})

t.test(
  "provisioner changed past admission to SwiftGuest: a Cluster API cell's Machine is released through the CellInfrastructure",
  async (t) => {
    // A one-cell Cluster API pool's third answer gives its Machine; the spec then names SwiftGuest again.
    const world = new PoolWorld(poolSpec({ replicas: 1 }))
    const swiftGuestCell = structuredClone(world.parent.spec.cell)
    world.edit(toClusterApi)
    for (let i = 0; i < 3 && world.of('Machine.cluster.x-k8s.io/v1beta2').length === 0; i++) {
      world.pass(sync)
      world.agent()
    }
    world.edit((spec) => {
      spec.cell = swiftGuestCell
    })
    world.parent.metadata.deletionTimestamp = world.now.toISOString()
    const request = world.request(true)
    t.same(Object.keys(request.children['Machine.cluster.x-k8s.io/v1beta2'] ?? {}), ['ml/inference-0'], 'the Machine is observed')
    const answer = finalize(request, world.now)
    t.equal(answer.finalized, false, 'not finalized while the Machine is observed')
    t.notOk(
      answer.children.some((c) => c.kind === 'Machine'),
      'the Machine (never Ready) is let go'
    )
    const infrastructure = answer.children.find((c) => c.kind === 'CellInfrastructure')
    const spec = (infrastructure as { spec?: { machines?: Array<{ name: string; release?: boolean }> } } | undefined)?.spec
    const entries = spec?.machines ?? []
    t.same(
      entries.map((e) => [e.name, e.release]),
      [['inference-0', true]],
      'its entry says release, so the agent lets Cluster API finish the deletion'
    )
  }
)
