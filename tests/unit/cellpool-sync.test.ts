/**
 * The cellpool sync hook as a whole: what it answers for a pool, its cells and its CellNodeSet,
 * what a spec error, a missing join Secret and a broken template keep, and how it reads children
 * of unexpected shapes (docs/cellpool.md; docs/metacontroller.md rule 5).
 */
import t from 'tap'
import { sync } from '../../hooks/cellpool/hooks.ts'
import { keepAsIs } from '../../hooks/metacontroller/keep.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import {
  CNS_KEY,
  GUEST_KEY,
  JOIN_TEMPLATE,
  NS,
  POOL,
  POOL_UID,
  PoolWorld,
  SECRET_KEY,
  SEED_KEY,
  T0,
  foreignNode,
  joinSecret,
  poolObject,
  poolSpec,
  request
} from './fixtures/cellpool.ts'

type Condition = { type: string; status: string; reason: string; message: string }
const conditions = (status: Record<string, unknown>): Condition[] => status.conditions as Condition[]
const condition = (status: Record<string, unknown>, type: string): Condition | undefined => conditions(status).find((c) => c.type === type)
const kinds = (children: readonly { kind?: string; metadata: { name?: string } }[]): string[] =>
  children.map((c) => `${c.kind}/${c.metadata.name}`)

/** A world with two Ready cells. */
function readyWorld(spec = poolSpec()): PoolWorld {
  const world = new PoolWorld(spec)
  world.settle(sync)
  return world
}

t.test('a new pool: the CellNodeSet first, cells once the agent observes the workload cluster', async (t) => {
  const answer = sync(request(), T0)
  t.same(kinds(answer.children), [`CellNodeSet/${POOL}`])
  t.same(
    [condition(answer.status, 'Progressing')?.reason, condition(answer.status, 'WorkloadClusterReachable')?.reason],
    ['WorkloadUnobserved', 'NotObserved']
  )
  t.equal(answer.status.selector, 'cells.kubeswift.io/pool=inference')
})

t.test('a pool settles with every cell Ready', async (t) => {
  const world = readyWorld()
  t.same(
    world.cells().map((c) => [c.name, c.phase]),
    [
      ['inference-0', 'Ready'],
      ['inference-1', 'Ready']
    ]
  )
  const status = world.parent.status as Record<string, unknown>
  t.same(
    [status.replicas, status.readyCells, status.creatingCells, status.drainingCells, status.failedCells, status.desiredReplicas],
    [2, 2, 0, 0, 0, 2]
  )
  t.same(
    conditions(status).map((c) => [c.type, c.status, c.reason]),
    [
      ['Ready', 'True', 'CellsReady'],
      ['Progressing', 'False', 'Settled'],
      ['Updated', 'True', 'UpToDate'],
      ['WorkloadClusterReachable', 'True', 'Reachable'],
      // The world relates no DRA inventory: the check says so and holds nothing back.
      ['PhysicalGPUsAvailable', 'Unknown', 'NoDevicesPublished']
    ]
  )
  const cns = world.cellNodeSet() as KubeObject
  const spec = cns.spec as {
    poolUID: string
    kubeconfigSecretRef: unknown
    nodes: Array<{ name: string; instance: string; cordon: boolean; labels: Record<string, string> }>
    demand?: unknown
  }
  t.equal(spec.poolUID, POOL_UID)
  t.same(spec.kubeconfigSecretRef, { name: 'kc', key: 'value' })
  t.same(
    spec.nodes.map((n) => [n.name, n.instance === world.guests().find((g) => g.metadata.name === n.name)?.metadata.uid, n.cordon]),
    [
      ['inference-0', true, false],
      ['inference-1', true, false]
    ]
  )
  t.equal(spec.nodes[0]?.labels['cells.kubeswift.io/instance'], world.guests()[0]?.metadata.uid)
  t.equal(spec.demand, undefined, 'no demand without autoscaling')
  const row = (status.cells as Array<Record<string, unknown>>)[0]
  t.same(
    [row?.nodeIP, row?.nodeName, row?.hostNode, row?.devices, row?.readyOnce],
    ['192.0.2.10', 'inference-0', 'gpu-host-1', ['0000:3b:00.0'], true]
  )
})

t.test("the bootstrap Secret is rendered into data, both keys, with the cell's labels for the kubelet", async (t) => {
  const world = readyWorld()
  const secret = world.of(SECRET_KEY).find((s) => s.metadata.name === 'inference-1-bootstrap') as KubeObject
  const data = secret.data as Record<string, string>
  t.equal(secret.stringData, undefined)
  t.equal(data['user-data'], data.value)
  const text = Buffer.from(data['user-data'] ?? '', 'base64').toString()
  t.match(
    text,
    `--node-labels cells.kubeswift.io/cell=inference-1,cells.kubeswift.io/cell-index=1,cells.kubeswift.io/pool=inference,cells.kubeswift.io/pool-uid=${POOL_UID},gpu=on`
  )
  t.match(text, 'echo {{ v1.local_hostname }}', 'cloud-init Jinja is left as written')
})

t.test('the guest is created only after its Secret and seed profile are observed and the row shows no Node', async (t) => {
  const world = new PoolWorld()
  world.step(sync)
  world.step(sync)
  t.same(world.guests(), [], 'Secrets and seed profiles first')
  t.equal(world.of(SEED_KEY).length, 2)
  world.step(sync)
  t.equal(world.guests().length, 2)
})

t.test('a stale Node of the same name holds the cell at Pending until the agent sweeps it', async (t) => {
  const world = new PoolWorld(poolSpec({ replicas: 1 }))
  world.nodes.set('inference-0', foreignNode('old-vm'))
  for (let i = 0; i < 4; i++) world.step(sync)
  t.same(world.guests(), [])
  t.same([world.cells()[0]?.phase, world.cells()[0]?.reason], ['Pending', 'NodeNameConflict'])
  const node = world.nodes.get('inference-0')
  if (node !== undefined) node.live = false
  world.settle(sync)
  t.equal(world.guests().length, 1)
  t.equal(world.cells()[0]?.phase, 'Ready')
})

/** Ways to block a pool; each must keep every observed child exactly as it is. */
const blockers: Array<{ name: string; reason: string; apply: (w: PoolWorld) => void; message: RegExp }> = [
  {
    name: 'an invalid spec',
    reason: 'SpecInvalid',
    apply: (w) =>
      w.edit((s) => {
        ;(s.cell as Record<string, unknown>).guestTemplate = { imageRef: { name: 'x' }, nodeName: 'pinned' }
      }),
    message: /guestTemplate/
  },
  {
    name: 'a missing join Secret',
    reason: 'JoinSecretMissing',
    apply: (w) => {
      w.related = []
    },
    message: /Secret ml\/join does not exist/
  },
  {
    name: 'a join Secret without its key',
    reason: 'JoinSecretMissing',
    apply: (w) => {
      w.related = [joinSecret(JOIN_TEMPLATE, 'other')]
    },
    message: /has no key user-data \(spec.bootstrap.joinSecretKey; it has other\)/
  },
  {
    name: 'a misspelt token',
    reason: 'BootstrapTemplateInvalid',
    apply: (w) => {
      w.related = [joinSecret('{{ nodeLabels }} {{ nodeLable }}')]
    },
    message: /\{\{ nodeLable \}\}/
  },
  {
    name: 'a template without {{ nodeLabels }}',
    reason: 'BootstrapTemplateInvalid',
    apply: (w) => {
      w.related = [joinSecret('#cloud-config\nhostname: {{ cellName }}\n')]
    },
    message: /nodeLabels/
  },
  {
    name: 'a template that renders past 64 KiB per cell, judged for the widest cell name',
    reason: 'BootstrapTemplateInvalid',
    apply: (w) => {
      w.related = [joinSecret(`{{ nodeLabels }}\n${'{{ cellName }}'.repeat(250)}${'#'.repeat(64 * 1024 - 3000)}`)]
    },
    message: /renders to \d+ bytes for cell inference-99999, past the bound of 65536 bytes \(64 KiB\) of bootstrap data per cell/
  },
  {
    name: 'a node label the workload agent may not set',
    reason: 'SpecInvalid',
    apply: (w) =>
      w.edit((s) => {
        ;((s.workloadCluster as Record<string, Record<string, unknown>>).node as Record<string, unknown>).labels = {
          'node-role.kubernetes.io/control-plane': ''
        }
      }),
    message: /node-role\.kubernetes\.io\/control-plane is refused: it marks a control-plane Node/
  }
]

t.test('a bad spec, a missing join Secret or a bad template keeps every child exactly as it is', async (t) => {
  for (const b of blockers) {
    t.test(b.name, async (t) => {
      const world = readyWorld()
      world.edit((s) => {
        s.replicas = 4
      })
      b.apply(world)
      const before = world.children()
      const answer = sync(world.request(), world.now)
      const order = (list: readonly KubeObject[]) =>
        [...list].sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`))
      t.same(order(answer.children), order(before.map(keepAsIs)), 'every observed child answered as recorded')
      const progressing = condition(answer.status, 'Progressing')
      t.same([progressing?.status, progressing?.reason], ['False', b.reason])
      t.match(progressing?.message, b.message)
      world.pass(sync)
      t.equal(world.writes - 1, 0, 'applying it writes no child (only the status)')
    })
  }
})

t.test('an existing cell keeps the template it was built with; a new cell takes the new one', async (t) => {
  const world = readyWorld()
  const before = world.guests().map((g) => JSON.stringify(g.spec))
  world.edit((s) => {
    ;((s.cell as Record<string, unknown>).guestTemplate as Record<string, unknown>).imageRef = { name: 'gpu-noble-2' }
    s.replicas = 3
  })
  world.settle(sync)
  const guests = world.guests()
  t.same(
    guests.slice(0, 2).map((g) => JSON.stringify(g.spec)),
    before,
    'existing guests untouched'
  )
  t.same((guests[2]?.spec as { imageRef: unknown }).imageRef, { name: 'gpu-noble-2' })
  t.same([world.condition('Updated')?.status, world.condition('Updated')?.reason], ['False', 'TemplateChanged'])
  t.match(world.condition('Updated')?.message, /inference-0, inference-1/)
})

t.test('rolling update replaces outdated cells one at a time, draining each first', async (t) => {
  const world = readyWorld(poolSpec({ updatePolicy: { type: 'RollingUpdate' } }))
  const oldUIDs = world.guests().map((g) => g.metadata.uid)
  world.edit((s) => {
    ;((s.cell as Record<string, unknown>).guestTemplate as Record<string, unknown>).imageRef = { name: 'gpu-noble-2' }
  })
  world.step(sync)
  t.same(
    world.cells().map((c) => c.phase),
    ['Ready', 'Draining'],
    'the highest index drains first'
  )
  t.equal(world.condition('Updated')?.reason, 'RollingUpdate')
  let maxDraining = 0
  for (let i = 0; i < 80 && world.condition('Updated')?.status !== 'True'; i++) {
    world.step(sync)
    maxDraining = Math.max(maxDraining, world.cells().filter((c) => c.phase === 'Draining' || c.phase === 'Deleting').length)
  }
  world.settle(sync)
  t.equal(world.condition('Updated')?.status, 'True')
  t.equal(maxDraining, 1, 'one cell at a time')
  t.notOk(
    world.guests().some((g) => oldUIDs.includes(g.metadata.uid)),
    'every guest replaced'
  )
  t.same(
    world.guests().map((g) => g.metadata.name),
    ['inference-0', 'inference-1'],
    'each replacement keeps its index'
  )
  t.ok(world.guests().every((g) => (g.spec as { imageRef: { name: string } }).imageRef.name === 'gpu-noble-2'))
})

t.test('scale down drains, then deletes the guest first and the seed profile and Secret after', async (t) => {
  const world = readyWorld(poolSpec({ replicas: 3 }))
  world.edit((s) => {
    s.replicas = 1
  })
  const node = world.nodes.get('inference-2')
  if (node !== undefined) node.pods = 1
  world.step(sync)
  t.same(
    world.cells().map((c) => c.phase),
    ['Ready', 'Draining', 'Draining']
  )
  const entries = (world.cellNodeSet()?.spec as { nodes: Array<{ name: string; cordon: boolean }> }).nodes
  t.same(
    entries.map((n) => [n.name, n.cordon]),
    [
      ['inference-0', false],
      ['inference-1', true],
      ['inference-2', true]
    ]
  )
  for (let i = 0; i < 6; i++) world.step(sync)
  t.same(
    world.guests().map((g) => g.metadata.name),
    ['inference-0', 'inference-2'],
    'the idle one went; a Pod keeps inference-2'
  )
  t.notOk(world.of(SECRET_KEY).some((s) => s.metadata.name === 'inference-1-bootstrap'))
  if (node !== undefined) node.pods = 0
  world.settle(sync)
  t.same(
    world.guests().map((g) => g.metadata.name),
    ['inference-0']
  )
  t.same(
    world.cells().map((c) => c.name),
    ['inference-0']
  )
})

t.test('the guest goes before its seed profile and Secret', async (t) => {
  const world = readyWorld(poolSpec({ replicas: 1 }))
  world.edit((s) => {
    s.replicas = 0
  })
  const deletions: string[] = []
  for (let i = 0; i < 10; i++) {
    world.step(sync)
    deletions.push(...world.operations.filter((o) => o.startsWith('delete')))
  }
  t.same(deletions, [
    `delete ${GUEST_KEY} ${NS}/inference-0`,
    `delete ${SECRET_KEY} ${NS}/inference-0-bootstrap`,
    `delete ${SEED_KEY} ${NS}/inference-0-seed`
  ])
  t.same([world.condition('Ready')?.status, world.condition('Ready')?.reason], ['True', 'ScaledToZero'])
})

t.test('an unobserved workload cluster: nothing created, nothing deleted, status says why', async (t) => {
  const world = readyWorld()
  world.agentUp = false
  world.advance(130)
  world.edit((s) => {
    s.replicas = 0
  })
  const before = world.children()
  const answer = sync(world.request(), world.now)
  const answered = new Set(answer.children.map((c) => `${c.kind}/${c.metadata.name}`))
  t.ok(
    before.every((c) => answered.has(`${c.kind}/${c.metadata.name}`)),
    'every child still answered'
  )
  t.same(
    [condition(answer.status, 'WorkloadClusterReachable')?.status, condition(answer.status, 'WorkloadClusterReachable')?.reason],
    ['False', 'Stale']
  )
})

t.test('autoscaling: the CellNodeSet asks for demand, and status carries the autoscaler fields', async (t) => {
  const world = readyWorld(poolSpec({ replicas: 1, autoscaling: { enabled: true, minReplicas: 1, maxReplicas: 3, scaleDown: 'Auto' } }))
  const demand = (world.cellNodeSet()?.spec as { demand: { resources: string[] } }).demand
  t.same(demand.resources, ['nvidia.com/gpu', 'nvidia.com/gpumem', 'nvidia.com/gpucores'])
  world.demand = { read: true, pendingPods: 2, shapes: [{ devices: 1, memoryMiB: 8192, cores: 30, pods: 2 }] }
  world.agent()
  world.step(sync)
  const status = world.parent.status as Record<string, unknown>
  t.same([status.desiredReplicas, world.condition('ScalingActive')?.reason], [2, 'ScaledUp'])
  t.same(status.cellDeviceShape, { memoryMiB: 81920, cores: 100 })
  t.type(status.lastScaleUpTime, 'string')
  world.settle(sync)
  t.equal(world.cells().filter((c) => c.phase === 'Ready').length, 2)
  t.equal(world.parent.spec.replicas, 1, 'spec.replicas is never written')
})

t.test('children and related objects of unexpected shapes are reported, never a throw', async (t) => {
  const world = readyWorld()
  const guest = world.guests()[0] as KubeObject
  guest.status = { phase: 'Running', gpu: { devices: 'all' }, network: { interfaces: { primary: '1.2.3.4' } }, conditions: 'none' }
  const cns = world.cellNodeSet() as KubeObject
  ;(cns.status as Record<string, unknown>).nodes = [
    { name: 'inference-1', present: true, instance: world.guests()[1]?.metadata.uid, ready: true, devices: 'x', allocations: 'y' },
    'junk',
    7
  ]
  ;(cns.status as Record<string, unknown>).demand = 'lots'
  world.parent.status = { cells: 'not a list', conditions: { Ready: true }, cellDeviceShape: [], demand: 5 }
  const answer = sync(world.request(), world.now)
  const progressing = condition(answer.status, 'Progressing')
  t.match(progressing?.message, /Unreadable: .*status\.gpu\.devices is a string, not a list/)
  t.match(progressing?.message, /status\.network\.interfaces is an object, not a list/)
  t.match(progressing?.message, /status\.nodes\[1\] is a string, not an object/)
  t.match(progressing?.message, /devices is a string, not a list/)
  t.match(progressing?.message, /status\.demand is a string/)
  t.ok(
    answer.children.some((c) => c.kind === 'SwiftGuest' && c.metadata.name === 'inference-0'),
    'the guest is kept'
  )
})

t.test('a join Secret whose data is not a map is a missing key, not a throw', async (t) => {
  const bad = joinSecret()
  bad.data = 'user-data'
  const answer = sync(request({ related: [bad] }), T0)
  t.equal(condition(answer.status, 'Progressing')?.reason, 'JoinSecretMissing')
})

t.test('request-chosen keys never reach a prototype', async (t) => {
  const req = request({ parent: poolObject(poolSpec({ bootstrap: { joinSecretRef: { name: '__proto__' } } })) })
  ;(req.related as Record<string, unknown>)['Secret.v1'] = JSON.parse('{"__proto__": {"metadata": {"name": "x"}}}')
  const children = req.children as Record<string, unknown>
  children[CNS_KEY] = JSON.parse('{"constructor": {"metadata": {"name": "constructor"}}}')
  const answer = sync(req, T0)
  t.ok(Array.isArray(answer.children))
  t.equal(({} as Record<string, unknown>).metadata, undefined, 'Object.prototype untouched')
})

t.test('a child without consistent cell labels is kept as it is and reported', async (t) => {
  const world = readyWorld()
  const guest = world.guests()[1] as KubeObject
  guest.metadata.labels = { ...guest.metadata.labels, 'cells.kubeswift.io/cell-index': '7' }
  const answer = sync(world.request(), world.now)
  const answered = answer.children.find((c) => c.kind === 'SwiftGuest' && c.metadata.name === 'inference-1')
  t.same(answered, keepAsIs(guest))
  t.match(condition(answer.status, 'Progressing')?.message, /SwiftGuest inference-1 carries no consistent cell labels/)
})

t.test('resyncAfterSeconds is the nearest deadline', async (t) => {
  const world = new PoolWorld(poolSpec({ replicas: 1, bootstrap: { joinSecretRef: { name: 'join' }, readyTimeout: '10m' } }))
  for (let i = 0; i < 3; i++) {
    world.pass(sync)
    world.agent()
  }
  // The cell waits for its guest (Pending), whose budget ends 10m after it was created.
  const answer = world.last
  t.equal(answer?.resyncAfterSeconds, 600)
  world.pass(sync)
  t.equal(world.cells()[0]?.phase, 'AllocatingGPU')
  world.advance(250)
  world.agent()
  t.equal(sync(world.request(), world.now).resyncAfterSeconds, 350, 'the budget left, from the transition kept in status')
})

t.test('one answer renders at most two bootstrap Secrets and builds at most two guests; the next syncs do the rest', async (t) => {
  const world = readyWorld()
  world.edit((s) => {
    s.replicas = 5
  })
  world.settle(sync)
  t.equal(world.cells().filter((c) => c.phase === 'Ready').length, 5, 'five Ready cells')
  // Every bootstrap Secret deleted by hand: the hook restores them, two per answer.
  world.observed[SECRET_KEY] = {}
  const first = sync(world.request(), world.now)
  t.equal(first.children.filter((c) => c.kind === 'Secret').length, 2, 'two Secrets in the first answer')
  const guests = first.children.filter((c) => c.kind === 'SwiftGuest').length
  t.equal(guests, 5, 'every guest kept')
  world.settle(sync)
  t.equal(world.of(SECRET_KEY).length, 5, 'all five back after a few syncs')
  t.equal(world.guests().length, 5, 'and no guest was touched')
})

t.test('more objects labelled as cells than one CellNodeSet holds: the pool is blocked and keeps them as they are', async (t) => {
  const world = readyWorld()
  world.edit((s) => {
    ;((s.workloadCluster as Record<string, Record<string, unknown>>).node as Record<string, unknown>).annotations = {
      'example.com/notes': 'n'.repeat(15 * 1024)
    }
  })
  // A tenant's own Secrets, labelled as cells of the pool: each would get a CellNodeSet entry of about 16 KiB.
  for (let i = 10; i < 110; i++) {
    const cell = `${POOL}-${i}`
    const labels = { 'cells.kubeswift.io/pool': POOL, 'cells.kubeswift.io/cell': cell, 'cells.kubeswift.io/cell-index': String(i) }
    ;(world.observed[SECRET_KEY] ??= {})[`${NS}/${cell}-bootstrap`] = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${cell}-bootstrap`, namespace: NS, labels }
    }
  }
  const before = world.children()
  const request = world.request()
  const answer = sync(request, world.now)
  const progressing = condition(answer.status, 'Progressing')
  t.same([progressing?.status, progressing?.reason], ['False', 'CellNodeSetTooLarge'])
  t.match(
    progressing?.message,
    /^102 cells have children, and 4 more may be created: each cell's CellNodeSet entry takes up to \d+ bytes .* past the bound of 245760 bytes \(240 KiB\)/
  )
  const order = (list: readonly KubeObject[]) => [...list].map((o) => `${o.kind}/${o.metadata.name}`).sort()
  t.same(order(answer.children), order(before), 'exactly the observed children, nothing new')
  const cns = answer.children.find((c) => c.kind === 'CellNodeSet')
  t.same(cns, keepAsIs(world.cellNodeSet() as KubeObject), 'the CellNodeSet as it was')
  const sent = Buffer.byteLength(JSON.stringify(request))
  const answered = Buffer.byteLength(JSON.stringify(answer))
  t.ok(answered < 2 * sent, `the answer (${answered} bytes) stays within twice the request (${sent})`)
})

t.test('spec.cell.provisioner changed while the pool has cells: they are kept as they are, and no cell is created', async (t) => {
  const world = readyWorld()
  const before = world.children()
  let original: unknown
  world.edit((s) => {
    original = structuredClone(s.cell)
    const cell = s.cell as Record<string, unknown>
    cell.provisioner = 'ClusterAPI'
    cell.clusterAPI = { clusterName: 'capi' }
    // Under ClusterAPI the guestTemplate carries only what a KubeSwiftMachine takes.
    const { imageRef, guestClassRef, interfaces } = cell.guestTemplate as Record<string, unknown>
    cell.guestTemplate = { imageRef, guestClassRef, interfaces }
  })
  const answer = sync(world.request(), world.now)
  const progressing = condition(answer.status, 'Progressing')
  t.same([progressing?.status, progressing?.reason], ['False', 'ProvisionerChanged'])
  t.match(
    progressing?.message,
    /^spec\.cell\.provisioner ClusterAPI: the pool has cells another provisioner made \(SwiftGuest inference-0, SwiftGuest inference-1, SwiftSeedProfile inference-0-seed, SwiftSeedProfile inference-1-seed\); they are kept as they are/
  )
  const order = (list: readonly KubeObject[]) => [...list].map((o) => `${o.kind}/${o.metadata.name}`).sort()
  t.same(order(answer.children), order(before), 'every observed child, nothing new: no guest or seed profile is deleted')
  for (const guest of world.guests()) t.ok(answer.children.some((c) => JSON.stringify(c) === JSON.stringify(keepAsIs(guest))))
  t.notOk(
    answer.children.some((c) => c.kind === 'Machine' || c.kind === 'CellInfrastructure'),
    'no Machine is made beside them'
  )
  world.edit((s) => {
    s.cell = original
  })
  const back = sync(world.request(), world.now)
  t.same(
    [condition(back.status, 'Progressing')?.reason, condition(back.status, 'Ready')?.status],
    ['Settled', 'True'],
    'changed back, the pool goes on with its cells'
  )
})

t.test(
  'a Node key the admin permits: the sync builds the cells and the CellNodeSet asks for it; without the permit, SpecInvalid',
  async (t) => {
    const spec = poolSpec({ replicas: 1 })
    ;((spec.workloadCluster as Record<string, unknown>).node as Record<string, unknown>).labels = {
      'node-restriction.kubernetes.io/gpu': 'true'
    }
    const context = { permittedNodeKeys: ['node-restriction.kubernetes.io/'] }
    const permitted = new PoolWorld(spec)
    permitted.settle((request, now) => sync(request, now, context))
    t.equal(permitted.guests().length, 1, 'the cell is built')
    const entries = (permitted.cellNodeSet() as unknown as { spec: { nodes: Array<{ labels: Record<string, string> }> } }).spec.nodes
    t.same(
      entries.map((e) => e.labels['node-restriction.kubernetes.io/gpu']),
      ['true'],
      'the CellNodeSet asks the agent for the permitted label'
    )
    const refused = new PoolWorld(spec)
    refused.settle(sync)
    t.same(refused.guests(), [], 'no cell without the permit')
    const progressing = refused.condition('Progressing')
    t.same([progressing?.status, progressing?.reason], ['False', 'SpecInvalid'])
    t.match(progressing?.message, /node-restriction\.kubernetes\.io\/gpu is refused: /)
  }
)
