// The workload agent against names that are members of every JavaScript object: Node names,
// label and annotation keys, HAMi annotation content, kubeconfig entry names and Secret keys.
// None of them may reach a prototype, throw, or lose a key. Every expectation is written out here.
import t from 'tap'
import { decide } from '../../hooks/agent/nodeset/decide/core.ts'
import type { Action, CellNodeSetInput, NodeHeartbeats, ObservedNode, WorkloadSnapshot } from '../../hooks/agent/model/observed.ts'
import { demandOf } from '../../hooks/agent/nodeset/demand/demand.ts'
import { ensurePatch } from '../../hooks/agent/nodeset/decide/ensure.ts'
import { parseRegistration, podDeviceCount } from '../../hooks/agent/nodeset/demand/hami.ts'
import { kubeconfigFromSecret, ownerProblem, reduceKubeconfig } from '../../hooks/agent/workload/kubeconfig.ts'
import type { Applied, CellNode } from '../../hooks/api/cellnodeset.ts'

const NOW = new Date('2026-11-30T12:00:00Z')
const MS = NOW.getTime()
const POOL_UID = 'uid-pool-a'
const GUEST = 'uid-guest-0'
const REGISTER = 'hami.io/node-nvidia-register'
const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty'] as const
const LIVE: NodeHeartbeats = { watchedSince: MS - 3_600_000, lease: { value: 'r', changedAt: MS - 10_000 } }

/** The cell labels the agent sets on a listed Node named `name`. */
const cellLabels = (name: string): Record<string, string> => ({
  'cells.kubeswift.io/cell': name,
  'cells.kubeswift.io/instance': GUEST,
  'cells.kubeswift.io/pool': 'pool-a',
  'cells.kubeswift.io/pool-uid': POOL_UID
})
const CELL_KEYS = Object.keys(cellLabels('x')).sort()
/** The agent's record of Node `name` as an earlier pass stored it. */
const record = (name: string, labels: string[], annotations: string[] = []): Applied => ({
  uid: `uid-${name}`,
  instance: GUEST,
  labels,
  annotations,
  taints: [],
  cordoned: false
})

/** JSON text turned into data the way a client reads it: `__proto__` becomes an own key. */
const parsed = <T>(value: unknown): T => JSON.parse(JSON.stringify(value)) as T
/** An object with own key `__proto__` (an object literal would set the prototype instead). */

function node(name: string, labels: Record<string, string>, annotations: Record<string, string>, pods: unknown[] = []): ObservedNode {
  return {
    node: {
      metadata: { name, uid: `uid-${name}`, resourceVersion: '7', labels, annotations },
      spec: {},
      status: { conditions: [{ type: 'Ready', status: 'True' }] }
    },
    beats: LIVE,
    pods: { read: true, items: pods }
  }
}
const entry = (name: string, more: Partial<CellNode> = {}): CellNode => ({
  name,
  instance: GUEST,
  labels: {},
  annotations: {},
  taints: [],
  cordon: false,
  ...more
})
const cns = (nodes: CellNode[], records: Applied[] = []): CellNodeSetInput => ({
  metadata: { name: 'pool-a', namespace: 'ns', generation: 3, finalizers: ['cells.kubeswift.io/workload-nodes'] },
  spec: { kubeconfigSecretRef: { name: 'wl', key: 'value' }, poolUID: POOL_UID, nodes },
  ...(records.length === 0
    ? {}
    : { status: { nodes: records.map((applied) => ({ name: applied.uid.slice(4), present: true, instance: GUEST, applied })) } })
})
const snap = (nodes: ObservedNode[], unbound: unknown[] = []): WorkloadSnapshot => ({
  reachability: { reason: 'Reachable', message: '' },
  nodes,
  unbound: { read: true, items: unbound }
})
const nodeActions = (actions: Action[]): Action[] => actions.filter((a) => a.type !== 'addFinalizer')

t.test('Nodes named after prototype members are listed, observed and left alone when settled', async (t) => {
  const names = ['constructor', 'toString', 'hasOwnProperty', 'valueOf']
  const nodes = names.map((n) =>
    node(n, cellLabels(n), {
      [REGISTER]: '[{"id":"GPU-0","type":"A100","devmem":81920,"devcore":100,"health":true}]'
    })
  )
  const decision = decide(cns(names.map((n) => entry(n))), snap(nodes), NOW)
  t.strictSame(nodeActions(decision.actions), [], 'nothing to write for settled Nodes')
  t.strictSame(
    (decision.status.nodes ?? []).map((r) => [r.name, r.present, r.instance, r.devices?.length]),
    names.map((n) => [n, true, GUEST, 1])
  )
})

t.test(
  'an unlisted Node named constructor is not found by a listed name lookup; a listed constructor missing is reported absent',
  async (t) => {
    const decision = decide(cns([entry('constructor')]), snap([node('toString', { team: 'x' }, {})]), NOW)
    t.strictSame(
      (decision.status.nodes ?? []).map((r) => [r.name, r.present]),
      [['constructor', false]]
    )
    t.strictSame(nodeActions(decision.actions), [])
  }
)

t.test('label and annotation keys named after prototype members are set, kept and removed as any other key', async (t) => {
  const labels = { ...cellLabels('pool-a-0'), toString: 'user', hasOwnProperty: 'old' }
  const annotations = { constructor: 'admin', valueOf: 'set-by-agent' }
  const claimed = [...CELL_KEYS, 'cells.kubeswift.io/cell-index', 'constructor', 'hasOwnProperty'].sort()
  const decision = decide(
    cns(
      [entry('pool-a-0', { labels: { constructor: 'wanted' }, annotations: { toString: 'note' } })],
      [record('pool-a-0', claimed, ['toString', 'valueOf'])]
    ),
    snap([node('pool-a-0', labels, annotations)]),
    NOW
  )
  t.strictSame(nodeActions(decision.actions), [
    {
      type: 'patchNode',
      name: 'pool-a-0',
      patch: {
        metadata: {
          labels: { constructor: 'wanted', 'cells.kubeswift.io/cell-index': '0', hasOwnProperty: null },
          annotations: { toString: 'note', valueOf: null }
        }
      }
    }
  ])
  t.strictSame(decision.status.nodes?.[0]?.applied?.labels, claimed, 'the record holds the keys as strings in a list')
})

t.test('a __proto__ key is an ordinary key: wanted, it is set; set by the agent and unwanted, it is removed', async (t) => {
  const wantedLabels = parsed<Record<string, string>>(JSON.parse('{"__proto__":"on"}'))
  t.ok(Object.hasOwn(wantedLabels, '__proto__'), 'the fixture carries an own __proto__ key')
  const set = ensurePatch(
    { labels: {}, annotations: {}, taints: [], unschedulable: false },
    { labels: wantedLabels, annotations: {}, taints: [], cordon: false },
    { labels: ['__proto__'], annotations: [], taints: [], cordoned: false }
  )
  const setLabels = set?.metadata?.labels ?? {}
  t.ok(Object.hasOwn(setLabels, '__proto__'), 'the patch sets __proto__ as a key')
  t.equal(Object.getPrototypeOf(setLabels), Object.prototype, 'the patch object keeps its prototype')
  t.equal(JSON.parse(JSON.stringify(set)).metadata.labels.__proto__, 'on')

  const nodeLabels = JSON.parse(
    `{"__proto__":"on",${Object.entries(cellLabels('cell-x'))
      .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)
      .join(',')}}`
  ) as Record<string, string>
  const nodeAnnotations = JSON.parse('{"__proto__":"a"}') as Record<string, string>
  const decision = decide(
    cns([entry('cell-x')], [record('cell-x', [...CELL_KEYS, '__proto__'].sort(), ['__proto__'])]),
    snap([node('cell-x', nodeLabels, nodeAnnotations)]),
    NOW
  )
  const [action] = nodeActions(decision.actions)
  const patch = (
    action as { patch?: { metadata?: { labels?: Record<string, unknown>; annotations?: Record<string, unknown> } } } | undefined
  )?.patch
  t.strictSame(JSON.parse(JSON.stringify(patch?.metadata?.labels ?? {})), JSON.parse('{"__proto__":null}'), 'the label is removed')
  t.strictSame(
    JSON.parse(JSON.stringify(patch?.metadata?.annotations ?? {})),
    JSON.parse('{"__proto__":null}'),
    'the annotation is removed'
  )
})

t.test('HAMi annotations whose content names prototype members read as data', async (t) => {
  t.strictSame(parseRegistration('{"constructor":1}'), { registration: 'Unparseable', devices: [] }, 'an object is not a registration')
  t.strictSame(
    parseRegistration('[{"id":"constructor","__proto__":{"devmem":5,"health":true}}]'),
    { registration: 'Parsed', devices: [{ id: 'constructor', type: '', memoryMiB: 0, cores: 0, healthy: false }] },
    'fields under __proto__ are not read'
  )
  t.strictSame(parseRegistration('[{"id":"toString","type":"hasOwnProperty","devmem":1024,"devcore":50,"health":true}]'), {
    registration: 'Parsed',
    devices: [{ id: 'toString', type: 'hasOwnProperty', memoryMiB: 1024, cores: 50, healthy: true }]
  })
  t.strictSame(parseRegistration('constructor,1,1024,100,toString,0,true:'), {
    registration: 'Parsed',
    devices: [{ id: 'constructor', type: 'toString', memoryMiB: 1024, cores: 100, healthy: true }]
  })
  t.equal(podDeviceCount('constructor,toString,1024,50'), 1)
  t.equal(podDeviceCount('__proto__'), undefined)
})

t.test('HAMi scheduling annotations naming a Node called constructor count on that Node only', async (t) => {
  const pending = {
    metadata: {
      name: 'p',
      annotations: { 'hami.io/vgpu-node': 'constructor', 'hami.io/vgpu-devices-to-allocate': 'GPU-0,NVIDIA,1024,50' }
    },
    spec: {},
    status: { phase: 'Pending' }
  }
  const labelsOf = (n: string): Record<string, string> => cellLabels(n)
  // Both Nodes register the device the Pod names: only the Node it is scheduled to counts it.
  const register = JSON.stringify([{ id: 'GPU-0', devmem: 1024, devcore: 100, health: true }])
  const nodes = ['constructor', 'toString'].map((n) => node(n, labelsOf(n), { [REGISTER]: register }))
  const decision = decide(cns([entry('constructor'), entry('toString')]), snap(nodes, [pending]), NOW)
  t.strictSame(
    (decision.status.nodes ?? []).map((r) => [r.name, r.allocations]),
    [
      ['constructor', { read: true, pods: 0, inFlight: true }],
      ['toString', { read: true, pods: 0, inFlight: false }]
    ]
  )
})

const kubeconfig = (cluster: string, user: string, context: string, current: string): string =>
  [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `  - name: ${JSON.stringify(cluster)}`,
    '    cluster:',
    '      server: https://workload.example.com:6443',
    'users:',
    `  - name: ${JSON.stringify(user)}`,
    '    user:',
    '      token: t0k',
    'contexts:',
    `  - name: ${JSON.stringify(context)}`,
    '    context:',
    `      cluster: ${JSON.stringify(cluster)}`,
    `      user: ${JSON.stringify(user)}`,
    `current-context: ${JSON.stringify(current)}`,
    ''
  ].join('\n')

t.test('kubeconfig cluster, user and context names that are prototype members resolve to their own entries', async (t) => {
  for (const name of PROTOTYPE_NAMES) {
    t.strictSame(
      reduceKubeconfig(kubeconfig(name, name, name, name)),
      { ok: true, config: { server: 'https://workload.example.com:6443', token: 't0k' } },
      `all named ${name}`
    )
  }
  t.strictSame(reduceKubeconfig(kubeconfig('w', 'u', 'c', 'constructor')), {
    ok: false,
    problem: { reason: 'CredentialInvalid', message: 'current-context constructor names no context' }
  })
  const wrongUser = reduceKubeconfig(kubeconfig('w', 'u', 'c', 'c').replace('      user: "u"', '      user: "toString"'))
  t.strictSame(wrongUser, {
    ok: false,
    problem: { reason: 'CredentialInvalid', message: 'the current context names no user entry (toString): a credential is required' }
  })
  const wrongCluster = reduceKubeconfig(kubeconfig('w', 'u', 'c', 'c').replace('      cluster: "w"', '      cluster: "constructor"'))
  t.strictSame(wrongCluster, {
    ok: false,
    problem: { reason: 'CredentialInvalid', message: 'the current context names no cluster entry (constructor)' }
  })
})

t.test('a __proto__ mapping inside a kubeconfig entry supplies no field', async (t) => {
  const text = kubeconfig('w', 'u', 'c', 'c').replace('      token: t0k', '      __proto__:\n        token: t0k')
  t.strictSame(reduceKubeconfig(text), {
    ok: false,
    problem: {
      reason: 'CredentialInvalid',
      message: 'users[0].user.__proto__ is refused: only token, client-certificate-data, client-key-data are allowed'
    }
  })
})

t.test('the kubeconfig Secret key is looked up as an own key', async (t) => {
  const labels = { 'cells.kubeswift.io/workload-kubeconfig': 'true' }
  const text = Buffer.from(kubeconfig('w', 'u', 'c', 'c')).toString('base64')
  for (const key of PROTOTYPE_NAMES) {
    const ref = { namespace: 'ns', name: 'kc', key }
    t.strictSame(
      kubeconfigFromSecret({ metadata: { name: 'kc', labels }, data: { value: text } }, ref),
      { ok: false, problem: { reason: 'CredentialInvalid', message: `Secret ns/kc has no key ${key}` } },
      `missing key ${key}`
    )
    const data = JSON.parse(`{${JSON.stringify(key)}:${JSON.stringify(text)}}`) as Record<string, string>
    t.strictSame(
      kubeconfigFromSecret({ metadata: { name: 'kc', labels }, data }, ref),
      { ok: true, config: { server: 'https://workload.example.com:6443', token: 't0k' } },
      `present key ${key}`
    )
  }
  const protoLabels = JSON.parse('{"__proto__":{"cells.kubeswift.io/workload-kubeconfig":"true"}}') as Record<string, unknown>
  t.strictSame(
    kubeconfigFromSecret(
      { metadata: { name: 'kc', labels: protoLabels }, data: { value: text } },
      { namespace: 'ns', name: 'kc', key: 'value' }
    ),
    {
      ok: false,
      problem: {
        reason: 'CredentialInvalid',
        message: 'Secret ns/kc lacks the label cells.kubeswift.io/workload-kubeconfig: "true" (an admin\'s opt-in)'
      }
    },
    'the opt-in label is not read through __proto__'
  )
})

t.test('owner references with fields of the wrong type are reported, never thrown on', async (t) => {
  const cnsObject = (ref: Record<string, unknown>, poolUID: unknown = 'uid-p'): unknown => ({
    metadata: { name: 'p', namespace: 'ns', ownerReferences: [{ controller: true, ...ref }] },
    spec: { poolUID }
  })
  t.equal(
    ownerProblem(cnsObject({ kind: { toString: 'x' }, apiVersion: 'cells.kubeswift.io/v1alpha1' }), undefined),
    'its controller is a {"toString":"x"}, not a GPUCellPool'
  )
  t.equal(
    ownerProblem(
      cnsObject({ kind: 'GPUCellPool', apiVersion: 'cells.kubeswift.io/v1alpha1', uid: { valueOf: 1, toString: null } }),
      undefined
    ),
    'its controller\'s uid {"valueOf":1,"toString":null} is not spec.poolUID uid-p'
  )
  t.equal(
    ownerProblem(cnsObject({ kind: 'GPUCellPool', apiVersion: 'cells.kubeswift.io/v1alpha1', uid: 'uid-p', name: { toString: 'x' } }), {
      metadata: { uid: ['constructor'] }
    }),
    'GPUCellPool {"toString":"x"} has uid ["constructor"], not spec.poolUID uid-p'
  )
  t.equal(
    ownerProblem(cnsObject({ kind: 'GPUCellPool', apiVersion: 'cells.kubeswift.io/v1alpha1', uid: 'uid-p', name: 'constructor' }), {
      metadata: { uid: 'uid-p' }
    }),
    undefined,
    'a pool named constructor is served'
  )
})

t.test('pending-Pod demand reads selectors, affinity and resources by own keys only', async (t) => {
  const pending = (spec: Record<string, unknown>): unknown => ({
    spec: { containers: [{ resources: { limits: { 'nvidia.com/gpu': '1' } } }], ...spec },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }
  })
  const spec = { resources: ['nvidia.com/gpu'], nodeLabels: { gpu: 'on' }, taints: [] }
  const shape = { devices: 1, memoryMiB: 0, cores: 0, cpuMillicores: 0, memoryBytes: 0 }
  t.equal(
    demandOf(pending({ nodeSelector: { constructor: 'x' } }), spec),
    undefined,
    'a selector on constructor does not match a Node without that label'
  )
  t.strictSame(
    demandOf(pending({ nodeSelector: { constructor: 'a' } }), { ...spec, nodeLabels: { constructor: 'a' } }),
    shape,
    'a pool label constructor matches'
  )
  const affinity = (key: string, operator: string): Record<string, unknown> => ({
    affinity: {
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator }] }] } }
    }
  })
  t.strictSame(
    demandOf(pending(affinity('hasOwnProperty', 'DoesNotExist')), spec),
    shape,
    "hasOwnProperty does not exist on the pool's Nodes"
  )
  t.equal(demandOf(pending(affinity('hasOwnProperty', 'Exists')), spec), undefined)
  const limitsOnly = {
    spec: { containers: [{ resources: { limits: { constructor: '1' } } }] },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }
  }
  t.strictSame(
    demandOf(limitsOnly, { ...spec, resources: ['constructor', 'toString'] }),
    shape,
    'a resource named constructor counts only where a container asks for it'
  )
  const noLimits = {
    spec: { containers: [{ resources: { limits: {} } }] },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }
  }
  t.equal(
    demandOf(noLimits, { ...spec, resources: ['constructor', 'toString', 'valueOf'] }),
    undefined,
    'inherited members are not requests'
  )
})
