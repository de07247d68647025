// Metacontroller's dynamic apply, as tests/support/merge.ts reproduces it. Every row states a
// behaviour of pkg/dynamic/apply/apply.go or ApplyUpdate (manage_children.go) in v4.17.2; the
// expected values were cross-checked against that Go code run on the same inputs.
import t from 'tap'
import fc from 'fast-check'
import {
  applyUpdate,
  deepEqual,
  detectListMapKey,
  goJson,
  jsonDiff,
  LAST_APPLIED_ANNOTATION,
  lastApplied,
  merge,
  mergeKeyString,
  setLastApplied,
  type Json,
  type JsonObject
} from '../support/merge.ts'

interface MergeRow {
  name: string
  given: { observed: JsonObject; lastApplied: JsonObject | null; desired: JsonObject }
  expected: JsonObject
}

/** A spec with containers of these names, each with its own image (`a` runs x, `b` runs y). */
const containers = (...names: Array<'a' | 'b'>): JsonObject => ({
  spec: { containers: names.map((name) => ({ name, image: name === 'a' ? 'x' : 'y' })) }
})

const mergeRows: MergeRow[] = [
  {
    name: 'a key never set is kept',
    given: {
      observed: { spec: { clusterIP: '10.96.0.7', type: 'NodePort' } },
      lastApplied: { spec: { type: 'NodePort' } },
      desired: { spec: { type: 'NodePort' } }
    },
    expected: { spec: { clusterIP: '10.96.0.7', type: 'NodePort' } }
  },
  {
    name: 'a key set by desired wins over the observed value',
    given: { observed: { spec: { replicas: 3 } }, lastApplied: { spec: { replicas: 1 } }, desired: { spec: { replicas: 2 } } },
    expected: { spec: { replicas: 2 } }
  },
  {
    name: 'a key set before and now omitted is removed',
    given: {
      observed: { metadata: { labels: { a: '1', b: '2', c: '3' } } },
      lastApplied: { metadata: { labels: { a: '1', b: '2' } } },
      desired: { metadata: { labels: { a: '1' } } }
    },
    expected: { metadata: { labels: { a: '1', c: '3' } } }
  },
  {
    name: 'a key desired sets to null is stored as null, not removed',
    given: { observed: { spec: { x: 1 } }, lastApplied: null, desired: { spec: { x: null } } },
    expected: { spec: { x: null } }
  },
  {
    name: 'a desired scalar over an observed map only removes the keys recorded before',
    given: { observed: { spec: { m: { a: 1, b: 2 } } }, lastApplied: { spec: { m: { a: 1 } } }, desired: { spec: { m: 'x' } } },
    expected: { spec: { m: { b: 2 } } }
  },
  {
    name: 'a desired map over an observed list leaves null when the list is atomic',
    given: { observed: { spec: { args: ['a'] } }, lastApplied: null, desired: { spec: { args: { b: 1 } } } },
    expected: { spec: { args: null } }
  },
  {
    name: 'a list of scalars is atomic: desired replaces it',
    given: {
      observed: { spec: { command: ['sh', '-c', 'old'] } },
      lastApplied: { spec: { command: ['sh'] } },
      desired: { spec: { command: ['bash'] } }
    },
    expected: { spec: { command: ['bash'] } }
  },
  {
    name: 'service ports merge by port, so an allocated nodePort survives',
    given: {
      observed: { spec: { ports: [{ port: 22, protocol: 'TCP', targetPort: 22, nodePort: 31022 }] } },
      lastApplied: { spec: { ports: [{ port: 22, protocol: 'TCP' }] } },
      desired: { spec: { ports: [{ port: 22, protocol: 'TCP', name: 'ssh' }] } }
    },
    expected: { spec: { ports: [{ port: 22, protocol: 'TCP', targetPort: 22, nodePort: 31022, name: 'ssh' }] } }
  },
  {
    name: 'service ports merge by port so two protocols on one port collapse into copies of the last',
    given: {
      observed: {
        spec: {
          ports: [
            { name: 'dns-tcp', port: 53, protocol: 'TCP', nodePort: 30053 },
            { name: 'dns-udp', port: 53, protocol: 'UDP', nodePort: 30053 }
          ]
        }
      },
      lastApplied: {
        spec: {
          ports: [
            { name: 'dns-tcp', port: 53, protocol: 'TCP' },
            { name: 'dns-udp', port: 53, protocol: 'UDP' }
          ]
        }
      },
      desired: {
        spec: {
          ports: [
            { name: 'dns-tcp', port: 53, protocol: 'TCP' },
            { name: 'dns-udp', port: 53, protocol: 'UDP' }
          ]
        }
      }
    },
    expected: {
      spec: {
        ports: [
          { name: 'dns-udp', port: 53, protocol: 'UDP', nodePort: 30053 },
          { name: 'dns-udp', port: 53, protocol: 'UDP', nodePort: 30053 }
        ]
      }
    }
  },
  {
    name: 'a new port number is appended after the observed ones',
    given: {
      observed: { spec: { ports: [{ port: 80, nodePort: 30080 }] } },
      lastApplied: { spec: { ports: [{ port: 80 }] } },
      desired: { spec: { ports: [{ port: 443 }, { port: 80 }] } }
    },
    expected: { spec: { ports: [{ port: 80, nodePort: 30080 }, { port: 443 }] } }
  },
  {
    name: 'reordering desired items changes nothing: observed order is kept',
    given: { observed: containers('a', 'b'), lastApplied: containers('a', 'b'), desired: containers('b', 'a') },
    expected: containers('a', 'b')
  },
  {
    name: 'an item applied before and now omitted is removed, an item never applied is kept',
    given: {
      observed: { spec: { volumes: [{ name: 'data' }, { name: 'kube-api-access-x7k2p' }, { name: 'old' }] } },
      lastApplied: { spec: { volumes: [{ name: 'data' }, { name: 'old' }] } },
      desired: { spec: { volumes: [{ name: 'data' }] } }
    },
    expected: { spec: { volumes: [{ name: 'data' }, { name: 'kube-api-access-x7k2p' }] } }
  },
  {
    name: 'an emptied list keeps the items Metacontroller never applied',
    given: {
      observed: { spec: { volumes: [{ name: 'a' }, { name: 'b' }] } },
      lastApplied: { spec: { volumes: [{ name: 'a' }] } },
      desired: { spec: { volumes: [] } }
    },
    expected: { spec: { volumes: [{ name: 'b' }] } }
  },
  {
    name: 'volume mounts merge by mountPath, which outranks name',
    given: {
      observed: { m: [{ name: 'v', mountPath: '/a', readOnly: true }] },
      lastApplied: { m: [{ name: 'v', mountPath: '/a' }] },
      desired: { m: [{ name: 'v', mountPath: '/b' }] }
    },
    expected: { m: [{ name: 'v', mountPath: '/b' }] }
  },
  {
    name: 'container ports merge by containerPort, which outranks name',
    given: {
      observed: { ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }] },
      lastApplied: { ports: [{ name: 'http', containerPort: 80 }] },
      desired: { ports: [{ name: 'web', containerPort: 80 }] }
    },
    expected: { ports: [{ name: 'web', containerPort: 80, protocol: 'TCP' }] }
  },
  {
    name: 'tolerations are atomic: the two server-added tolerations are dropped',
    given: {
      observed: {
        tolerations: [
          { key: 'gpu', operator: 'Exists' },
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }
        ]
      },
      lastApplied: { tolerations: [{ key: 'gpu', operator: 'Exists' }] },
      desired: { tolerations: [{ key: 'gpu', operator: 'Exists' }] }
    },
    expected: { tolerations: [{ key: 'gpu', operator: 'Exists' }] }
  },
  {
    name: 'network policy rules are atomic: a defaulted protocol is dropped',
    given: {
      observed: { ingress: [{ ports: [{ port: 53, protocol: 'TCP' }] }] },
      lastApplied: { ingress: [{ ports: [{ port: 53 }] }] },
      desired: { ingress: [{ ports: [{ port: 53 }] }] }
    },
    expected: { ingress: [{ ports: [{ port: 53 }] }] }
  },
  {
    name: 'a list becomes atomic when one observed item lacks the key',
    given: { observed: { ports: [{ port: 80, nodePort: 30080 }, { name: 'x' }] }, lastApplied: null, desired: { ports: [{ port: 80 }] } },
    expected: { ports: [{ port: 80 }] }
  },
  {
    name: 'a list with a non-object item is atomic',
    given: { observed: { l: [{ name: 'a', v: 1 }, 'x'] }, lastApplied: null, desired: { l: [{ name: 'a' }] } },
    expected: { l: [{ name: 'a' }] }
  },
  {
    name: 'merge keys compare as text: port "80" and 80 are the same item',
    given: { observed: { ports: [{ port: 80, nodePort: 30080 }] }, lastApplied: null, desired: { ports: [{ port: '80' }] } },
    expected: { ports: [{ port: '80', nodePort: 30080 }] }
  },
  {
    name: 'a merge key holding null still counts as present',
    given: { observed: { l: [{ name: null, v: 1 }] }, lastApplied: null, desired: { l: [{ name: null, w: 2 }] } },
    expected: { l: [{ name: null, v: 1, w: 2 }] }
  },
  {
    name: 'a list the observed object lacks is taken whole, duplicates included',
    given: {
      observed: {},
      lastApplied: null,
      desired: {
        l: [
          { name: 'a', v: 1 },
          { name: 'a', v: 2 }
        ]
      }
    },
    expected: {
      l: [
        { name: 'a', v: 1 },
        { name: 'a', v: 2 }
      ]
    }
  },
  {
    name: 'duplicate keys in desired merged into a list map keep only the last item',
    given: {
      observed: { l: [{ name: 'b' }] },
      lastApplied: null,
      desired: {
        l: [
          { name: 'a', v: 1 },
          { name: 'a', v: 2 }
        ]
      }
    },
    expected: { l: [{ name: 'b' }, { name: 'a', v: 2 }] }
  }
]

t.test('merge', async (t) => {
  for (const row of mergeRows) {
    t.test(row.name, async (t) => {
      const { observed, lastApplied: last, desired } = row.given
      const before = structuredClone(row.given)
      t.same(merge(observed, last, desired), row.expected)
      t.same(row.given, before, 'inputs are not mutated')
    })
  }
})

const pod = (extra: JsonObject = {}): JsonObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'ns', labels: { app: 'x' } },
  spec: { containers: [{ name: 'c', image: 'img:1' }] },
  ...extra
})
const stored = (desired: JsonObject, patch: (o: JsonObject) => void = () => {}): JsonObject => {
  const o = setLastApplied(desired, desired)
  const meta = o.metadata as JsonObject
  Object.assign(meta, { uid: 'u-1', resourceVersion: '7', creationTimestamp: '2026-01-01T00:00:00Z', managedFields: [{ manager: 'mc' }] })
  o.status = { phase: 'Pending' }
  const c = ((o.spec as JsonObject).containers as JsonObject[])[0] as JsonObject
  Object.assign(c, { imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log' })
  patch(o)
  return o
}

interface ApplyRow {
  name: string
  given: { observed: JsonObject; desired: JsonObject }
  expected: { changed: boolean; record?: JsonObject }
}

const applyRows: ApplyRow[] = [
  {
    name: 'the same answer against the applied state changes nothing',
    given: { observed: stored(pod()), desired: pod() },
    expected: { changed: false }
  },
  {
    name: 'status is never written',
    given: { observed: stored(pod()), desired: pod({ status: { phase: 'Running' } }) },
    expected: { changed: true, record: pod({ status: { phase: 'Running' } }) }
  },
  {
    name: 'system metadata is never written',
    given: {
      observed: stored(pod()),
      desired: pod({ metadata: { name: 'p', namespace: 'ns', labels: { app: 'x' }, uid: 'other', resourceVersion: '1', generation: 9 } })
    },
    expected: { changed: true }
  },
  {
    name: 'a changed label is applied and recorded',
    given: { observed: stored(pod()), desired: pod({ metadata: { name: 'p', namespace: 'ns', labels: { app: 'y' } } }) },
    expected: { changed: true, record: pod({ metadata: { name: 'p', namespace: 'ns', labels: { app: 'y' } } }) }
  },
  {
    name: 'a last-applied annotation in the answer is not recorded inside the record',
    given: {
      observed: stored(pod()),
      desired: pod({
        metadata: { name: 'p', namespace: 'ns', labels: { app: 'x' }, annotations: { [LAST_APPLIED_ANNOTATION]: '{"x":1}' } }
      })
    },
    expected: { changed: true, record: pod({ metadata: { name: 'p', namespace: 'ns', labels: { app: 'x' }, annotations: {} } }) }
  }
]

t.test('applyUpdate', async (t) => {
  for (const row of applyRows) {
    t.test(row.name, async (t) => {
      const result = applyUpdate(row.given.observed, row.given.desired)
      t.equal(result.changed, row.expected.changed)
      const meta = result.object.metadata as JsonObject
      const observedMeta = row.given.observed.metadata as JsonObject
      for (const f of ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields'])
        t.same(meta[f], observedMeta[f], `metadata.${f} as observed`)
      t.same(result.object.status, row.given.observed.status, 'status as observed')
      if (row.expected.record !== undefined) t.same(lastApplied(result.object), row.expected.record)
    })
  }
  t.test('an unreadable record fails the sync', async (t) => {
    const observed = pod({ metadata: { name: 'p', annotations: { [LAST_APPLIED_ANNOTATION]: '[1]' } } })
    t.throws(() => applyUpdate(observed, pod()), /can't unmarshal/)
  })
  t.test('a child without a record keeps every field the answer omits', async (t) => {
    const observed = { ...pod(), metadata: { name: 'p', namespace: 'ns', labels: { app: 'x', extra: 'y' } } }
    t.same((applyUpdate(observed, pod()).object.metadata as JsonObject).labels, { app: 'x', extra: 'y' })
  })
})

t.test('the record is written as Go writes JSON', async (t) => {
  const rows: { name: string; given: Json; expected: string }[] = [
    {
      name: 'map keys are sorted at every level',
      given: { b: 1, a: { d: [{ z: 1, y: 2 }], c: 2 } },
      expected: '{"a":{"c":2,"d":[{"y":2,"z":1}]},"b":1}'
    },
    {
      name: 'HTML characters and line separators are escaped',
      given: { s: '<a&b>\u2028' },
      expected: '{"s":"\\u003ca\\u0026b\\u003e\\u2028"}'
    },
    {
      name: 'numbers print as Go prints float64 and int64',
      given: [1e21, 1e-7, 0.000001, 123456789],
      expected: '[1e+21,1e-7,0.000001,123456789]'
    }
  ]
  for (const row of rows) t.test(row.name, async (t) => t.equal(goJson(row.given), row.expected))
})

t.test('the list-map key is guessed from all three versions', async (t) => {
  const rows: { name: string; given: Json[][]; expected: string }[] = [
    { name: 'containerPort outranks port and name', given: [[{ containerPort: 1, port: 1, name: 'a' }]], expected: 'containerPort' },
    { name: 'a key must be common to every item of every version', given: [[{ port: 1, name: 'a' }], [{ name: 'b' }]], expected: 'name' },
    { name: 'no items at all means no key', given: [[], []], expected: '' },
    { name: 'a key outside the known list is never guessed', given: [[{ key: 'a' }]], expected: '' },
    { name: 'uid, ip and path are known keys, in that order', given: [[{ path: '/', ip: '1.1.1.1', uid: 'x' }]], expected: 'uid' }
  ]
  for (const row of rows) t.test(row.name, async (t) => t.equal(detectListMapKey(...row.given), row.expected))
  t.test('key values print as Go %v prints them', async (t) => {
    t.same(
      [80, '80', null, true, 1.5, 1234567.5, 0.00001].map((v) => mergeKeyString(v)),
      ['80', '80', '<nil>', 'true', '1.5', '1.2345675e+06', '1e-05']
    )
  })
})

t.test('jsonDiff names every differing path', async (t) => {
  t.same(jsonDiff({ a: { b: 1, c: [1, 2] } }, { a: { b: 2, c: [1, 3] }, d: null }), [
    'a.b: 1 -> 2',
    'a.c[1]: 2 -> 3',
    'd: (absent) -> null'
  ])
})

// Kubernetes-shaped values: each key always holds one type, and list-map items have unique keys.
const leaf = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom('a', 'b'), fc.constant(null))
const specArb = (depth: number): fc.Arbitrary<JsonObject> =>
  fc.record(
    {
      replicas: leaf,
      labels: fc.dictionary(fc.constantFrom('app', 'tier', 'x'), fc.constantFrom('1', '2')),
      command: fc.array(fc.constantFrom('sh', '-c', 'run'), { maxLength: 3 }),
      ports: fc.uniqueArray(
        fc.record(
          {
            port: fc.integer({ min: 1, max: 4 }),
            protocol: fc.constantFrom('TCP', 'UDP'),
            nodePort: fc.integer({ min: 30000, max: 30003 })
          },
          { requiredKeys: ['port'] }
        ),
        { selector: (p) => p.port, maxLength: 3 }
      ),
      tolerations: fc.array(fc.record({ key: fc.constantFrom('a', 'b'), effect: fc.constant('NoExecute') }), { maxLength: 2 }),
      ...(depth > 0 ? { template: specArb(depth - 1) } : {})
    },
    { requiredKeys: [] }
  )
const spec = specArb(1)

t.test('properties', async (t) => {
  t.test('every key desired sets is in the result; keys dropped since last time are gone; others stay', async (t) => {
    // fast-check throws with a shrunk counterexample.
    fc.assert(
      fc.property(spec, fc.option(spec), spec, (o, l, d) => {
        const r = merge(o, l, d)
        for (const k of Object.keys(d)) if (!(k in r)) return false
        for (const k of Object.keys(l ?? {})) if (!(k in d) && k in r) return false
        for (const k of Object.keys(o)) if (!(k in d) && !(k in (l ?? {})) && !deepEqual(r[k], o[k])) return false
        return true
      })
    )
    t.pass('holds for every generated case')
  })
  t.test('merge(observed, desired, desired) holds desired at every scalar it sets', async (t) => {
    fc.assert(
      fc.property(spec, spec, (o, d) => {
        const r = merge(o, d, d)
        return ['replicas', 'command', 'tolerations'].every((k) => !(k in d) || deepEqual(r[k], d[k]))
      })
    )
    t.pass('holds for every generated case')
  })
  t.test('merging the same answer twice is idempotent', async (t) => {
    fc.assert(
      fc.property(spec, fc.option(spec), spec, (o, l, d) => {
        const once = merge(o, l, d)
        return deepEqual(merge(once, d, d), once)
      })
    )
    t.pass('holds for every generated case')
  })
  t.test('any input reaches a fixed point by the second merge', async (t) => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.jsonValue(), (o, l, d) => {
        const obj = (v: unknown): JsonObject => ({ v: v as Json })
        const twice = merge(merge(obj(o), obj(l), obj(d)), obj(d), obj(d))
        return deepEqual(merge(twice, obj(d), obj(d)), twice)
      })
    )
    t.pass('holds for every generated case')
  })
  t.test('an applied answer applied again sends nothing', async (t) => {
    fc.assert(
      fc.property(spec, fc.option(spec), spec, (o, l, d) => {
        const desired = { apiVersion: 'v1', kind: 'X', metadata: { name: 'n' }, spec: d }
        const observed = { apiVersion: 'v1', kind: 'X', metadata: { name: 'n', uid: 'u' }, spec: o, status: { s: 1 } }
        const first = applyUpdate(l === null ? observed : setLastApplied(observed, { ...desired, spec: l }), desired)
        return !applyUpdate(first.object, desired).changed
      })
    )
    t.pass('holds for every generated case')
  })
})
