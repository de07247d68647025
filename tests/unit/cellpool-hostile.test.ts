// The GPUCellPool hooks against names that are members of every JavaScript object: pool and cell
// names, label, annotation and taint keys, Secret keys, the join and kubeconfig Secret keys, and
// values whose shape would make a string conversion throw. None may reach a prototype, throw, or
// delete a child. Every expectation is written out here.
import t from 'tap'
import { sync, finalize, customize, reviewCellPool } from '../../hooks/cellpool/hooks.ts'
import { poolProblems } from '../../hooks/cellpool/rules/validate.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { CNS_KEY, JOIN_TEMPLATE, NS, PoolWorld, SECRET_KEY, T0, poolObject, poolSpec, request } from './fixtures/cellpool.ts'
import type { CellPoolSyncRequest } from '../../hooks/cellpool/model/request.ts'

const LAST_APPLIED = 'metacontroller.k8s.io/last-applied-configuration'
type Answer = ReturnType<typeof sync>
const conditionOf = (answer: Answer, type: string): { status: string; reason: string; message: string } | undefined =>
  (answer.status as { conditions: Array<{ type: string; status: string; reason: string; message: string }> }).conditions.find(
    (c) => c.type === type
  )
const childNames = (answer: Answer): string[] => (answer.children as KubeObject[]).map((c) => `${c.kind}/${c.metadata.name}`).sort()
/** JSON text read the way the API server's answers are: `__proto__` is an own key. */
const fromJson = <T>(text: string): T => JSON.parse(text) as T
/** A join Secret holding the template under `key` (an own key, whatever its name). */
const joinSecretWithKey = (key: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'join', namespace: NS },
  type: 'Opaque',
  data: fromJson<Record<string, string>>(`{${JSON.stringify(key)}:${JSON.stringify(Buffer.from(JOIN_TEMPLATE).toString('base64'))}}`)
})
/** The settled world's children as last applied: what keeping each answers. */
const recorded = (world: PoolWorld): KubeObject[] =>
  world.children().map((c) => JSON.parse(String(c.metadata.annotations?.[LAST_APPLIED])) as KubeObject)
const byName = (list: KubeObject[]): KubeObject[] =>
  [...list].sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`))

t.test('a taint key or effect that is an object with a toString field is a spec error, not a thrown error', async (t) => {
  for (const taint of [
    { key: { toString: 'x' }, effect: 'NoSchedule' },
    { key: 'gpu', effect: { toString: 'x' } },
    { key: { valueOf: 1, toString: null }, effect: [] }
  ]) {
    const spec = poolSpec({ workloadCluster: { kubeconfigSecretRef: { name: 'kc' }, node: { taints: [taint, taint] } } })
    const problems = poolProblems('inference', spec)
    t.ok(
      problems.some((p) => p.field.startsWith('spec.workloadCluster.node.taints[0]')),
      `the taint is named: ${JSON.stringify(problems.map((p) => p.field))}`
    )
    t.notOk(
      problems.some((p) => p.message.includes('repeats key')),
      'keys that are not strings are not compared'
    )
  }
  const world = new PoolWorld()
  world.settle(sync)
  const kept = recorded(world)
  world.edit((spec) => {
    spec.workloadCluster = { kubeconfigSecretRef: { name: 'kc' }, node: { taints: [{ key: { toString: 'x' }, effect: 'NoSchedule' }] } }
  })
  const answer = sync(world.request(), world.now)
  t.same([conditionOf(answer, 'Progressing')?.status, conditionOf(answer, 'Progressing')?.reason], ['False', 'SpecInvalid'])
  t.strictSame(byName(answer.children as KubeObject[]), byName(kept), 'every child is kept as last applied')
})

t.test('two taints with the same string key and effect are still reported as a repeat', async (t) => {
  const taint = { key: 'gpu', effect: 'NoSchedule' }
  const problems = poolProblems(
    'inference',
    poolSpec({ workloadCluster: { kubeconfigSecretRef: { name: 'kc' }, node: { taints: [taint, taint] } } })
  )
  t.strictSame(
    problems.map((p) => p.message),
    ['spec.workloadCluster.node.taints[1] repeats key gpu with effect NoSchedule; a Node carries one taint per key and effect']
  )
})

t.test('a pool named constructor gets its cells like any other pool', async (t) => {
  const world = new PoolWorld()
  world.parent.metadata.name = 'constructor'
  world.settle(sync)
  t.strictSame(
    world.cells().map((c) => [c.name, c.phase]),
    [
      ['constructor-0', 'Ready'],
      ['constructor-1', 'Ready']
    ]
  )
  t.strictSame(
    world.children().map((c) => `${c.kind}/${c.metadata.name}`),
    [
      'Secret/constructor-0-bootstrap',
      'Secret/constructor-1-bootstrap',
      'SwiftSeedProfile/constructor-0-seed',
      'SwiftSeedProfile/constructor-1-seed',
      'SwiftGuest/constructor-0',
      'SwiftGuest/constructor-1',
      'CellNodeSet/constructor'
    ]
  )
})

t.test('pool names that are not DNS labels (toString, hasOwnProperty, __proto__) are spec errors naming metadata.name', async (t) => {
  for (const name of ['toString', 'hasOwnProperty', '__proto__']) {
    const parent = poolObject()
    parent.metadata.name = name
    const answer = sync(request({ parent }), T0)
    t.equal(conditionOf(answer, 'Progressing')?.reason, 'SpecInvalid', name)
    t.match(conditionOf(answer, 'Progressing')?.message, /metadata\.name/, `${name}: the message names metadata.name`)
    t.strictSame(answer.children, [], `${name}: nothing is created`)
    const verdict = reviewCellPool({
      uid: 'u',
      operation: 'CREATE',
      name,
      namespace: NS,
      object: { metadata: { name, namespace: NS }, spec: poolSpec() }
    } as unknown as Parameters<typeof reviewCellPool>[0])
    t.ok(
      verdict.problems.some((p) => p.includes('metadata.name')),
      `${name}: admission names metadata.name`
    )
  }
})

for (const key of ['constructor', 'toString', 'hasOwnProperty', '__proto__']) {
  t.test(`bootstrap.joinSecretKey ${key} is read as an own key of the join Secret`, async (t) => {
    const spec = poolSpec({ bootstrap: { joinSecretRef: { name: 'join' }, joinSecretKey: key } })
    t.strictSame(poolProblems('inference', spec), [], 'the key is a valid Secret key')
    const missing = sync(request({ parent: poolObject(spec) }), T0)
    t.same(
      [conditionOf(missing, 'Progressing')?.reason, conditionOf(missing, 'Progressing')?.message],
      [
        'JoinSecretMissing',
        `Secret ml/join has no key ${key} (spec.bootstrap.joinSecretKey; it has user-data); no cell is created until it does; existing cells are kept as they are.`
      ]
    )
    t.strictSame(missing.children, [], 'no cell without the key')
    const world = new PoolWorld(spec, { related: [joinSecretWithKey(key)] })
    world.settle(sync)
    t.strictSame(
      world.cells().map((c) => [c.name, c.phase]),
      [
        ['inference-0', 'Ready'],
        ['inference-1', 'Ready']
      ],
      'cells are built from the template under that key'
    )
    const secret = world.children().find((c) => c.metadata.name === 'inference-0-bootstrap') as { data: Record<string, string> } | undefined
    t.match(
      Buffer.from(secret?.data['user-data'] ?? '', 'base64').toString('utf8'),
      /kubeadm join --node-name inference-0 /,
      'the template from that key is rendered'
    )
  })
}

t.test('label, annotation and taint keys named after prototype members reach the CellNodeSet as own keys', async (t) => {
  const labels = fromJson<Record<string, string>>('{"constructor":"a","toString":"b","hasOwnProperty":"c","gpu":"on"}')
  const annotations = fromJson<Record<string, string>>('{"constructor":"x","valueOf":"y"}')
  const taints = [
    { key: 'constructor', value: 'true', effect: 'NoSchedule' },
    { key: 'toString', effect: 'NoExecute' }
  ]
  const spec = poolSpec({
    workloadCluster: { kubeconfigSecretRef: { name: 'kc' }, key: 'constructor', node: { labels, annotations, taints } }
  })
  t.strictSame(poolProblems('inference', spec), [])
  const world = new PoolWorld(spec)
  world.settle(sync)
  const cns = world.cellNodeSet() as unknown as {
    spec: {
      kubeconfigSecretRef: unknown
      nodes: Array<{ name: string; labels: Record<string, string>; annotations?: Record<string, string>; taints: unknown[] }>
    }
  }
  t.strictSame(cns.spec.kubeconfigSecretRef, { key: 'constructor', name: 'kc' })
  t.equal(cns.spec.nodes.length, 2)
  for (const node of cns.spec.nodes) {
    for (const k of ['constructor', 'toString', 'hasOwnProperty']) t.ok(Object.hasOwn(node.labels, k), `${node.name} carries label ${k}`)
    t.strictSame(
      ['constructor', 'toString', 'hasOwnProperty'].map((k) => node.labels[k]),
      ['a', 'b', 'c']
    )
    t.strictSame(node.annotations, { constructor: 'x', valueOf: 'y' })
    t.strictSame(node.taints, [
      { effect: 'NoSchedule', key: 'constructor', value: 'true' },
      { effect: 'NoExecute', key: 'toString' }
    ])
  }
  const bootstrap = world.children().find((c) => c.metadata.name === 'inference-0-bootstrap') as
    { data: Record<string, string> } | undefined
  const text = Buffer.from(bootstrap?.data['user-data'] ?? '', 'base64').toString('utf8')
  t.match(text, /constructor=a,/, 'the label reaches --node-labels')
  t.match(text, /--register-with-taints "constructor=true:NoSchedule,toString:NoExecute"/, 'the taints reach --register-with-taints')
})

t.test('observed children and related objects keyed by prototype names are found only as own keys', async (t) => {
  const world = new PoolWorld()
  world.settle(sync)
  const req = world.request() as unknown as {
    children: Record<string, Record<string, unknown>>
    related: Record<string, Record<string, unknown>>
  }
  // A stray child named __proto__ (an own key, as JSON gives it) and one named constructor.
  const stray = (name: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: NS,
      annotations: { [LAST_APPLIED]: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: NS } }) }
    }
  })
  const secrets = req.children[SECRET_KEY] as Record<string, unknown>
  Object.defineProperty(secrets, `${NS}/__proto__`, { value: stray('__proto__'), enumerable: true })
  Object.defineProperty(secrets, `${NS}/constructor`, { value: stray('constructor'), enumerable: true })
  const answer = sync(req as unknown as CellPoolSyncRequest, world.now)
  const names = childNames(answer)
  t.ok(!names.includes('Secret/__proto__') && !names.includes('Secret/constructor'), 'children of names the pool never gives are left out')
  t.ok(names.includes(`Secret/${world.parent.metadata.name}-0-bootstrap`), 'the cells are answered as before')
  t.match(
    conditionOf(answer, 'Progressing')?.message,
    new RegExp(`Secret ${NS}/constructor carries this pool's controller-uid label but is not a child the pool names; it is left out`)
  )

  // Related and children maps whose type keys are prototype names hold nothing of use.
  const base = JSON.stringify(world.request())
  const odd = fromJson<CellPoolSyncRequest>(
    `${base.slice(0, -1)},"related":{"constructor":{},"__proto__":{${JSON.stringify(SECRET_KEY)}:{"ml/join":${JSON.stringify(joinSecretWithKey('user-data'))}}}},"children":{"toString":{},${JSON.stringify(CNS_KEY)}:{}}}`
  )
  t.ok(Object.hasOwn(odd.related as object, '__proto__'), 'the request carries an own __proto__ type key')
  const blocked = sync(odd, world.now)
  t.equal(conditionOf(blocked, 'Progressing')?.reason, 'JoinSecretMissing', 'no join Secret is found through __proto__')
  const fin = finalize({ ...odd, finalizing: true }, world.now)
  t.strictSame([fin.children, fin.finalized], [[], true], 'nothing observed of a known type: the pool is finalized')
})

t.test("customize relates a join Secret named constructor, in the pool's namespace only", async (t) => {
  const parent = poolObject(poolSpec({ bootstrap: { joinSecretRef: { name: 'constructor' } } }))
  t.strictSame(
    customize({ controller: {}, parent }).relatedResources.filter((r) => r.resource === 'secrets'),
    [{ apiVersion: 'v1', resource: 'secrets', namespace: NS, names: ['constructor'] }]
  )
  const proto = poolObject(fromJson<Record<string, unknown>>('{"bootstrap":{"__proto__":{"joinSecretRef":{"name":"x"}}}}'))
  t.strictSame(customize({ controller: {}, parent: proto }), { relatedResources: [] }, 'a ref under __proto__ is not read')
})
