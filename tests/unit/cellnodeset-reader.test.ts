/**
 * The one reader of a stored CellNodeSet: the spec all or nothing with every failing field named,
 * the status kept part by part, and never a throw whatever was stored.
 */
import t from 'tap'
import fc from 'fast-check'
import { MAX_READ_PROBLEMS, readCellNodeSet, type CellNodeSetRead } from '../../hooks/api/cellnodeset-reader.ts'

const spec = {
  kubeconfigSecretRef: { name: 'wl', key: 'value' },
  poolUID: 'uid-pool',
  nodes: [
    { name: 'pool-0', instance: 'g0', labels: { team: 'ml' }, taints: [{ key: 'gpu', effect: 'NoSchedule' }], cordon: false },
    { name: 'pool-1' }
  ],
  demand: { resources: ['nvidia.com/gpu'], nodeLabels: { team: 'ml' } }
}
const reachable = { type: 'Reachable', status: 'True', reason: 'Reachable', message: 'ok', lastTransitionTime: '2026-01-01T00:00:00Z' }
const row0 = {
  name: 'pool-0',
  present: true,
  instance: 'g0',
  live: true,
  ready: true,
  devices: [{ id: 'GPU-0', type: 'A100', memoryMiB: 81920, cores: 100, healthy: true }],
  registration: 'Parsed',
  allocations: { read: true, pods: 0, inFlight: false }
}
const status = {
  observedGeneration: 3,
  observedTime: '2026-01-01T00:00:10Z',
  conditions: [reachable],
  nodeCount: 1,
  nodes: [row0, { name: 'pool-1', present: false }],
  demand: { read: true, pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 0, cores: 0, pods: 1 }] },
  swept: [{ name: 'pool-9', instance: 'g9', reason: 'Orphan', time: '2026-01-01T00:00:05Z' }]
}
const stored = (s: unknown, sp: unknown = spec, metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'cells.kubeswift.io/v1alpha1',
  kind: 'CellNodeSet',
  metadata: { name: 'pool', namespace: 'ns', uid: 'u', resourceVersion: '7', generation: 3, ...metadata },
  spec: sp,
  ...(s === undefined ? {} : { status: s })
})
const read = (object: unknown): CellNodeSetRead => {
  const result = readCellNodeSet(object)
  if (typeof result === 'string') throw new Error(result)
  return result
}

t.test('a CellNodeSet as the two sides write it reads back whole', async (t) => {
  const r = read(stored(status))
  t.same(r.metadata, { name: 'pool', namespace: 'ns', uid: 'u', resourceVersion: '7', generation: 3 })
  t.same(r.spec, spec)
  t.same(r.status, status)
  t.same(r.specProblems, [])
  t.same(r.statusProblems, [])
  t.equal(r.hasStatus, true)
  t.same([...r.rows.keys()], ['pool-0', 'pool-1'])
  t.same(r.rows.get('pool-0'), row0)
  t.same(r.reachable, reachable)
})

t.test('no status, an empty one, or one that is not an object: nothing read, hasStatus false', async (t) => {
  for (const s of [undefined, {}, null]) {
    const r = read(stored(s))
    t.same(r.status, {})
    t.equal(r.hasStatus, false)
    t.same(r.statusProblems, [])
    t.equal(r.reachable, undefined)
  }
  const text = read(stored('Reachable'))
  t.same(text.status, {})
  t.equal(text.hasStatus, false)
  t.same(text.statusProblems, ['status is a string, not an object'])
})

t.test('the spec is all or nothing, with every failing field named', async (t) => {
  const r = read(
    stored(status, {
      kubeconfigSecretRef: { name: '', key: 'value' },
      nodes: [{ name: 'pool-0', taints: [{ key: 'gpu', effect: 'Sometimes' }] }, { instance: 'g1' }, 'pool-2'],
      demand: { resources: 'nvidia.com/gpu' }
    })
  )
  t.equal(r.spec, undefined)
  t.same(r.specProblems, [
    'spec.kubeconfigSecretRef.name must not be empty',
    'spec.poolUID is required',
    'spec.nodes[0].taints[0].effect "Sometimes" is not one of NoSchedule, PreferNoSchedule, NoExecute',
    'spec.nodes[1].name is required',
    'spec.nodes[2] is a string, not an object',
    'spec.demand.resources is a string, not a list'
  ])
  t.same(r.status, status, 'a bad spec does not stop the status from being read')
  const { spec: _none, ...withoutSpec } = stored(status)
  t.same(read(withoutSpec).specProblems, ['spec is required'])
})

t.test('the status keeps what passes: a bad row costs that row, a bad optional field only itself', async (t) => {
  const r = read(
    stored({
      observedGeneration: 'three',
      observedTime: 'yesterday',
      conditions: [{ type: 'Reachable', status: 'True', reason: 'Reachable', message: 'no time' }],
      nodeCount: 2,
      nodes: [
        { ...row0, devices: [{ id: 'GPU-0', type: 'A100', memoryMiB: '80Gi', cores: 100, healthy: true }, row0.devices[0]] },
        { name: 'pool-1' },
        { name: 'pool-2', present: true, allocations: { pods: 3 }, registration: 'Maybe' },
        { name: 'pool-0', present: false }
      ],
      demand: { read: true, pendingPods: 2, shapes: 'many' },
      swept: { name: 'pool-9' }
    })
  )
  t.same(r.status, {
    conditions: [],
    nodeCount: 2,
    nodes: [row0, { name: 'pool-2', present: true }],
    demand: { read: true, pendingPods: 2 }
  })
  t.same(r.statusProblems, [
    'status.observedGeneration is a string, not an integer',
    'status.observedTime "yesterday" is not an RFC 3339 time',
    'status.conditions[0].lastTransitionTime is required',
    'status.nodes[0].devices[0].memoryMiB is a string, not an integer',
    'status.nodes[1].present is required',
    'status.nodes[2].registration "Maybe" is not one of Missing, Parsed, Unparseable',
    'status.nodes[2].allocations.read is required',
    'status.nodes[3] repeats the name of an earlier entry',
    'status.demand.shapes is a string, not a list',
    'status.swept is an object, not a list'
  ])
  t.equal(r.hasStatus, true)
  t.equal(r.reachable, undefined, 'a Reachable condition without its time is not read')
  t.same(r.rows.get('pool-0'), row0, 'the first row of a name wins')
})

t.test('a list over its schema limit is dropped whole and named', async (t) => {
  const swept = Array.from({ length: 21 }, (_, i) => ({ name: `n-${i}`, reason: 'Stale', time: '2026-01-01T00:00:00Z' }))
  const r = read(stored({ swept }))
  t.same(r.status, {})
  t.same(r.statusProblems, ['status.swept has 21 entries; at most 20'])
})

t.test('fields the schema does not name are not carried along, and __proto__ stays data', async (t) => {
  const object = JSON.parse(
    JSON.stringify(stored({ nodeCount: 0, extra: 'x' })).replace('"nodeCount":0', '"nodeCount":0,"__proto__":{"polluted":true}')
  ) as Record<string, unknown>
  const r = read(object)
  t.same(r.status, { nodeCount: 0 })
  t.equal(Object.getPrototypeOf(r.status), Object.prototype)
  t.equal(({} as Record<string, unknown>).polluted, undefined)
  const named = read(stored(undefined, spec, { name: 'constructor', finalizers: ['a', 7, 'b'], generation: 1.5 }))
  t.same(named.metadata, { name: 'constructor', namespace: 'ns', uid: 'u', resourceVersion: '7', finalizers: ['a', 'b'] })
})

t.test('what is not a CellNodeSet at all says why', async (t) => {
  t.equal(readCellNodeSet(null), 'not an object with metadata')
  t.equal(readCellNodeSet({ spec }), 'not an object with metadata')
  t.equal(readCellNodeSet({ metadata: { name: '' } }), 'metadata.name is required')
  t.equal(readCellNodeSet({ metadata: { name: 5 } }), 'metadata.name is required')
})

t.test(`at most ${MAX_READ_PROBLEMS} problems are named, the rest counted`, async (t) => {
  const r = read(stored({ nodes: Array.from({ length: 25 }, (_, i) => ({ name: `n-${i}` })) }))
  t.equal(r.statusProblems.length, MAX_READ_PROBLEMS + 1)
  t.equal(r.statusProblems.at(-1), 'and 5 more')
  t.same(r.status, { nodes: [] })
})

t.test('any stored JSON reads without a throw, and what it keeps passes the schema again unchanged', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.jsonValue(), (s, sp) => {
      const r = read(stored(s, sp))
      const again = read(stored(r.status, r.spec ?? sp))
      return JSON.stringify(again.status) === JSON.stringify(r.status) && again.statusProblems.length === 0
    }),
    { numRuns: 300 }
  )
  t.pass('300 runs')
})
