// The API-server stand-in of the unit layer (tests/support/server-defaults.ts) and the simulated
// Metacontroller pass built on it. Rows name what Kubernetes v1.37.2 does (defaults.go, the
// Service allocators, the admission plugins enabled by default); the simulation rows name what
// Metacontroller's dynamic apply then does with it.
import t from 'tap'
import fc from 'fast-check'
import { lastApplied, type Json, type JsonObject } from '../support/merge.ts'
import { DECORATOR_ANNOTATION } from '../support/children.ts'
import { FakeServer } from '../support/fake-server.ts'
import { defaultOnCreate, defaultOnUpdate } from '../support/server-defaults.ts'
import { simulateMetacontroller, type ObjectsByType, type SimulateInput, type SimulateResult } from '../support/simulate.ts'

const at = (o: Json | undefined, path: string): Json | undefined =>
  path
    .split('.')
    .reduce<Json | undefined>((v, k) => (Array.isArray(v) ? v[Number(k)] : v !== null && typeof v === 'object' ? v[k] : undefined), o)

const service = (spec: JsonObject, name = 'web'): JsonObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'ns' },
  spec
})
/** A NodePort Service with a TCP port per entry (port name to number), in the entries' order. */
const nodePortService = (ports: Record<string, number>): JsonObject =>
  service({ type: 'NodePort', ports: Object.entries(ports).map(([name, port]) => ({ name, port })) })
const policy = (spec: JsonObject): JsonObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'np', namespace: 'ns' },
  spec
})
const pod = (spec: JsonObject): JsonObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns' }, spec })
const container = (extra: JsonObject = {}): JsonObject => ({ name: 'main', image: 'registry/img:1.2', ...extra })
const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }
const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }

interface CreateRow {
  name: string
  given: JsonObject
  /** A subset the stored object must contain. */
  expected: JsonObject
  /** Dotted paths that must be absent. */
  absent?: string[]
  /** Dotted paths whose value must be exactly this (t.has lets arrays be longer). */
  same?: Record<string, Json>
}

const createRows: CreateRow[] = [
  {
    name: 'a Service gets protocol TCP, targetPort = port, sessionAffinity None and type ClusterIP',
    given: service({ ports: [{ port: 80 }] }),
    expected: { spec: { sessionAffinity: 'None', type: 'ClusterIP' } },
    same: { 'spec.ports': [{ port: 80, protocol: 'TCP', targetPort: 80 }], status: { loadBalancer: {} } }
  },
  {
    name: 'a Service gets one IPv4 family, SingleStack and internalTrafficPolicy Cluster, and no externalTrafficPolicy',
    given: service({ ports: [{ port: 80 }] }),
    expected: { spec: { ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', internalTrafficPolicy: 'Cluster' } },
    absent: ['spec.externalTrafficPolicy', 'spec.ports.0.nodePort', 'metadata.generation']
  },
  {
    name: 'a NodePort Service gets externalTrafficPolicy Cluster',
    given: service({ type: 'NodePort', ports: [{ port: 22 }] }),
    expected: { spec: { externalTrafficPolicy: 'Cluster', internalTrafficPolicy: 'Cluster' } }
  },
  {
    name: 'a requested node port is kept',
    given: service({ type: 'NodePort', ports: [{ port: 22, nodePort: 31000 }] }),
    expected: { spec: { ports: [{ port: 22, nodePort: 31000 }] } }
  },
  {
    name: 'a NetworkPolicy gets protocol TCP on every port, policyTypes [Ingress] and generation 1',
    given: policy({ podSelector: {}, ingress: [{ ports: [{ port: 53 }, { port: 53, protocol: 'UDP' }] }] }),
    expected: {
      metadata: { generation: 1 },
      spec: {
        policyTypes: ['Ingress'],
        ingress: [
          {
            ports: [
              { port: 53, protocol: 'TCP' },
              { port: 53, protocol: 'UDP' }
            ]
          }
        ]
      }
    },
    same: { 'spec.policyTypes': ['Ingress'] }
  },
  {
    name: 'a NetworkPolicy with egress rules gets policyTypes [Ingress, Egress]',
    given: policy({ podSelector: {}, egress: [{ ports: [{ port: 53 }] }] }),
    expected: { spec: { policyTypes: ['Ingress', 'Egress'], egress: [{ ports: [{ port: 53, protocol: 'TCP' }] }] } },
    same: { 'spec.policyTypes': ['Ingress', 'Egress'] }
  },
  {
    name: 'written policyTypes are left alone',
    given: policy({ podSelector: {}, policyTypes: ['Egress'], egress: [] }),
    expected: {},
    same: { 'spec.policyTypes': ['Egress'] }
  },
  {
    name: 'a Pod gets the two DefaultTolerationSeconds tolerations after its own',
    given: pod({ containers: [container()], tolerations: [{ key: 'gpu', operator: 'Exists' }] }),
    expected: {},
    same: { 'spec.tolerations': [{ key: 'gpu', operator: 'Exists' }, notReady, unreachable] }
  },
  {
    name: 'a Pod that already tolerates not-ready gets only unreachable added',
    given: pod({ containers: [container()], tolerations: [notReady] }),
    expected: {},
    same: { 'spec.tolerations': [notReady, unreachable] }
  },
  {
    name: 'a Pod tolerating every taint gets no toleration added',
    given: pod({ containers: [container()], tolerations: [{ operator: 'Exists' }] }),
    expected: {},
    same: { 'spec.tolerations': [{ operator: 'Exists' }] }
  },
  {
    name: 'a Pod gets dnsPolicy, restartPolicy, schedulerName, securityContext {}, grace period, service links, priority',
    given: pod({ containers: [container()] }),
    expected: {
      metadata: { generation: 1 },
      spec: {
        dnsPolicy: 'ClusterFirst',
        restartPolicy: 'Always',
        schedulerName: 'default-scheduler',
        securityContext: {},
        terminationGracePeriodSeconds: 30,
        enableServiceLinks: true,
        priority: 0,
        preemptionPolicy: 'PreemptLowerPriority',
        serviceAccountName: 'default',
        serviceAccount: 'default'
      },
      status: { phase: 'Pending', qosClass: 'BestEffort' }
    }
  },
  {
    name: 'a container gets terminationMessagePath/Policy, imagePullPolicy, resources {} and port protocol',
    given: pod({
      containers: [
        container({ ports: [{ containerPort: 22 }], env: [{ name: 'N', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] })
      ]
    }),
    expected: {
      spec: {
        containers: [
          {
            terminationMessagePath: '/dev/termination-log',
            terminationMessagePolicy: 'File',
            imagePullPolicy: 'IfNotPresent',
            resources: {},
            ports: [{ containerPort: 22, protocol: 'TCP' }],
            env: [{ valueFrom: { fieldRef: { apiVersion: 'v1' } } }]
          }
        ]
      }
    }
  },
  {
    name: 'an untagged image is pulled Always',
    given: pod({ containers: [container({ image: 'ubuntu' })] }),
    expected: { spec: { containers: [{ imagePullPolicy: 'Always' }] } }
  },
  {
    name: 'limits without requests become requests, and equal cpu and memory make a Guaranteed Pod',
    given: pod({ containers: [container({ resources: { limits: { cpu: '1', memory: '1Gi', 'nvidia.com/gpu': '1' } } })] }),
    expected: {
      spec: { containers: [{ resources: { requests: { cpu: '1', memory: '1Gi', 'nvidia.com/gpu': '1' } } }] },
      status: { qosClass: 'Guaranteed' }
    }
  },
  {
    name: 'probes get their default timings, path / and scheme HTTP',
    given: pod({ containers: [container({ readinessProbe: { httpGet: { port: 8080 } } })] }),
    expected: {
      spec: {
        containers: [
          {
            readinessProbe: {
              timeoutSeconds: 1,
              periodSeconds: 10,
              successThreshold: 1,
              failureThreshold: 3,
              httpGet: { path: '/', scheme: 'HTTP' }
            }
          }
        ]
      }
    }
  },
  {
    name: 'volumes get defaultMode 420 and hostPath type ""',
    given: pod({
      containers: [container()],
      volumes: [{ name: 's', secret: { secretName: 'x' } }, { name: 'h', hostPath: { path: '/dev' } }, { name: 'e' }]
    }),
    expected: {
      spec: {
        volumes: [
          { name: 's', secret: { defaultMode: 420 } },
          { name: 'h', hostPath: { type: '' } },
          { name: 'e', emptyDir: {} }
        ]
      }
    }
  },
  {
    name: 'a Pod opting out of token automount gets no token volume',
    given: pod({ containers: [container()], automountServiceAccountToken: false }),
    expected: { spec: { serviceAccountName: 'default' } },
    absent: ['spec.volumes', 'spec.containers.0.volumeMounts']
  },
  {
    name: "a Secret's stringData is stored as base64 data, type Opaque",
    given: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'ns' }, stringData: { token: 'abc' } },
    expected: { type: 'Opaque', data: { token: 'YWJj' } },
    absent: ['stringData']
  },
  {
    name: 'empty lists, nulls and empty maps read back absent, an empty struct stays',
    given: policy({ podSelector: {}, ingress: [], egress: [{ to: [], ports: [{ port: 53, endPort: null }] }], policyTypes: [] }),
    expected: {},
    same: { spec: { podSelector: {}, egress: [{ ports: [{ port: 53, protocol: 'TCP' }] }], policyTypes: ['Ingress', 'Egress'] } }
  },
  {
    name: 'empty containers are kept: a Pod spec lists them without omitempty',
    given: pod({ containers: [container({ env: [], args: null, resources: { limits: {} } })], tolerations: [], nodeSelector: {} }),
    expected: { spec: { containers: [{ resources: {} }] } },
    absent: ['spec.containers.0.env', 'spec.containers.0.args', 'spec.containers.0.resources.limits', 'spec.nodeSelector'],
    same: { 'spec.tolerations': [notReady, unreachable] }
  },
  {
    name: 'a Namespace gets its name label, the kubernetes finalizer and phase Active',
    given: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } },
    expected: {
      metadata: { labels: { 'kubernetes.io/metadata.name': 'team' } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' }
    }
  },
  {
    name: 'a custom resource gets generation 1 and loses a status sent on create',
    given: {
      apiVersion: 'swift.kubeswift.io/v1alpha1',
      kind: 'SwiftGuest',
      metadata: { name: 'g', namespace: 'ns' },
      spec: {},
      status: { phase: 'x' }
    },
    expected: { metadata: { generation: 1 } },
    absent: ['status']
  }
]

t.test('defaultOnCreate', async (t) => {
  for (const row of createRows) {
    t.test(row.name, async (t) => {
      const stored = defaultOnCreate(row.given, new FakeServer())
      t.has(stored, row.expected)
      for (const path of row.absent ?? []) t.equal(at(stored, path), undefined, `${path} is absent`)
      for (const [path, value] of Object.entries(row.same ?? {})) t.same(at(stored, path), value, path)
    })
  }
  t.test('every object gets uid, resourceVersion, creationTimestamp and managedFields', async (t) => {
    const stored = defaultOnCreate(service({ ports: [{ port: 80 }] }), new FakeServer({ now: '2026-02-03T04:05:06Z' }))
    t.match(at(stored, 'metadata.uid'), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/)
    t.equal(at(stored, 'metadata.resourceVersion'), '1')
    t.equal(at(stored, 'metadata.creationTimestamp'), '2026-02-03T04:05:06Z')
    t.equal(at(stored, 'metadata.managedFields.0.operation'), 'Update')
  })
  t.test('a Service gets a cluster IP and clusterIPs holding it', async (t) => {
    const stored = defaultOnCreate(service({ ports: [{ port: 80 }] }), new FakeServer())
    t.match(at(stored, 'spec.clusterIP'), /^10\.96\.\d+\.\d+$/)
    t.same(at(stored, 'spec.clusterIPs'), [at(stored, 'spec.clusterIP')])
  })
  t.test('a NodePort Service gets a node port in 30000-32767 per entry, entries sharing a port number share it', async (t) => {
    const stored = defaultOnCreate(
      service({
        type: 'NodePort',
        ports: [
          { name: 'ssh', port: 22 },
          { name: 'dns', port: 53, protocol: 'TCP' },
          { name: 'dns-udp', port: 53, protocol: 'UDP' }
        ]
      }),
      new FakeServer()
    )
    const ports = (at(stored, 'spec.ports') as JsonObject[]).map((p) => p.nodePort as number)
    t.ok(ports.every((p) => p >= 30000 && p <= 32767))
    t.not(ports[0], ports[1])
    t.equal(ports[1], ports[2])
  })
  t.test('a Pod gets the default service account token volume, mounted read-only in every container', async (t) => {
    const stored = defaultOnCreate(pod({ containers: [container(), container({ name: 'ssh' })] }), new FakeServer())
    const volume = at(stored, 'spec.volumes.0') as JsonObject
    t.match(volume.name, /^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/)
    t.has(volume, {
      projected: {
        defaultMode: 420,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt' } },
          { downwardAPI: {} }
        ]
      }
    })
    for (const i of [0, 1])
      t.same(at(stored, `spec.containers.${i}.volumeMounts`), [
        { name: volume.name, readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }
      ])
  })
  t.test('the same seed allocates the same uids, addresses and ports; another seed does not', async (t) => {
    const make = (seed: number): JsonObject =>
      defaultOnCreate(service({ type: 'NodePort', ports: [{ port: 22 }] }), new FakeServer({ seed }))
    t.same(make(7), make(7))
    t.not(at(make(7), 'spec.ports.0.nodePort'), at(make(8), 'spec.ports.0.nodePort'))
  })
  const refused: { name: string; given: () => void; expected: RegExp }[] = [
    {
      name: 'a node port another Service holds is refused',
      given: () => {
        const server = new FakeServer()
        defaultOnCreate(service({ type: 'NodePort', ports: [{ port: 22, nodePort: 31000 }] }, 'a'), server)
        defaultOnCreate(service({ type: 'NodePort', ports: [{ port: 22, nodePort: 31000 }] }, 'b'), server)
      },
      expected: /Invalid: .*provided port is already allocated/
    },
    {
      name: 'two Service ports with one port number and protocol are refused',
      given: () =>
        defaultOnCreate(
          service({
            ports: [
              { name: 'a', port: 53 },
              { name: 'b', port: 53 }
            ]
          }),
          new FakeServer()
        ),
      expected: /Invalid: spec.ports\[1\]: Duplicate value: TCP\/53/
    },
    {
      name: 'several Service ports need names',
      given: () => defaultOnCreate(service({ ports: [{ port: 53 }, { port: 54 }] }), new FakeServer()),
      expected: /Invalid: spec.ports\[0\].name: Required value/
    }
  ]
  for (const row of refused) t.test(row.name, async (t) => t.throws(row.given, row.expected))
})

t.test('defaultOnUpdate', async (t) => {
  t.test('an update that changes nothing keeps the resourceVersion', async (t) => {
    const server = new FakeServer()
    const stored = defaultOnCreate(policy({ podSelector: {}, ingress: [] }), server)
    t.same(defaultOnUpdate(stored, stored, server), stored)
  })
  t.test('a changed spec moves resourceVersion and bumps generation', async (t) => {
    const server = new FakeServer()
    const stored = defaultOnCreate(policy({ podSelector: {}, ingress: [] }), server)
    const updated = defaultOnUpdate(stored, { ...stored, spec: { podSelector: { matchLabels: { a: 'b' } } } }, server)
    t.equal(at(updated, 'metadata.generation'), 2)
    t.not(at(updated, 'metadata.resourceVersion'), at(stored, 'metadata.resourceVersion'))
    t.same(at(updated, 'spec.policyTypes'), ['Ingress'])
  })
  t.test('a stale resourceVersion is a Conflict', async (t) => {
    const server = new FakeServer()
    const stored = defaultOnCreate(policy({ podSelector: {} }), server)
    t.throws(
      () => defaultOnUpdate(stored, { ...stored, metadata: { ...(stored.metadata as JsonObject), resourceVersion: '0' } }, server),
      /Conflict/
    )
  })
  t.test('an update without nodePort or clusterIP keeps them, node ports by port name', async (t) => {
    const server = new FakeServer()
    const stored = defaultOnCreate(nodePortService({ ssh: 22, web: 80 }), server)
    const updated = defaultOnUpdate(stored, nodePortService({ web: 8080, ssh: 2222 }), server)
    t.equal(at(updated, 'spec.clusterIP'), at(stored, 'spec.clusterIP'))
    t.equal(at(updated, 'spec.ports.0.nodePort'), at(stored, 'spec.ports.1.nodePort'))
    t.equal(at(updated, 'spec.ports.1.nodePort'), at(stored, 'spec.ports.0.nodePort'))
  })
  t.test('turning a NodePort Service into ClusterIP drops its node ports and externalTrafficPolicy', async (t) => {
    const server = new FakeServer()
    const stored = defaultOnCreate(service({ type: 'NodePort', ports: [{ port: 22 }] }), server)
    const spec = { ...(stored.spec as JsonObject), type: 'ClusterIP' }
    const updated = defaultOnUpdate(stored, { ...stored, spec }, server)
    t.equal(at(updated, 'spec.ports.0.nodePort'), undefined)
    t.equal(at(updated, 'spec.externalTrafficPolicy'), undefined)
  })
  t.test('a Pod update that changes more than images is refused', async (t) => {
    const server = new FakeServer()
    const stored = defaultOnCreate(pod({ containers: [container()] }), server)
    const spec = structuredClone(stored.spec) as JsonObject
    ;((spec.containers as JsonObject[])[0] as JsonObject).command = ['sh']
    t.throws(() => defaultOnUpdate(stored, { ...stored, spec }, server), /Invalid: spec: Forbidden: pod updates/)
    const image = structuredClone(stored.spec) as JsonObject
    ;((image.containers as JsonObject[])[0] as JsonObject).image = 'registry/img:1.3'
    t.equal(at(defaultOnUpdate(stored, { ...stored, spec: image }, server), 'spec.containers.0.image'), 'registry/img:1.3')
  })
})

const parent: JsonObject = {
  apiVersion: 'worker.gpustack.ai/v1alpha1',
  kind: 'Instance',
  metadata: { name: 'i', namespace: 'ns', uid: 'parent-uid' }
}
const methods = {
  'Pod.v1': 'OnDelete',
  'Service.v1': 'InPlace',
  'NetworkPolicy.networking.k8s.io/v1': 'InPlace',
  'Secret.v1': 'InPlace'
} as const

/** Runs passes, feeding each result back as the next observed state. */
function passes(desired: JsonObject[], count: number, extra: Partial<SimulateInput> = {}): SimulateResult[] {
  const server = new FakeServer()
  let observed: ObjectsByType = {}
  const out: SimulateResult[] = []
  for (let i = 0; i < count; i++) {
    const result = simulateMetacontroller({ parent, observed, desired, methods, server, ...extra })
    out.push(result)
    observed = result.observed
  }
  return out
}

t.test('simulateMetacontroller', async (t) => {
  t.test('a create carries the record, a controller ownerReference and the controller-uid label', async (t) => {
    const [first] = passes([service({ type: 'NodePort', ports: [{ port: 22 }] })], 1)
    const created = first?.observed['Service.v1']?.['ns/web'] as JsonObject
    t.same(lastApplied(created), {
      ...service({ type: 'NodePort', ports: [{ port: 22 }] }),
      metadata: { name: 'web', namespace: 'ns', labels: { 'controller-uid': 'parent-uid' } }
    })
    t.same(at(created, 'metadata.ownerReferences'), [
      {
        apiVersion: 'worker.gpustack.ai/v1alpha1',
        kind: 'Instance',
        name: 'i',
        uid: 'parent-uid',
        controller: true,
        blockOwnerDeletion: true
      }
    ])
    t.same(first?.operations, ['create Service.v1 ns/web'])
  })
  const convergence: { name: string; given: JsonObject[]; expected: number[] }[] = [
    {
      name: 'a Service answered without its defaults converges: the second pass writes nothing',
      given: [nodePortService({ ssh: 22, web: 80 })],
      expected: [1, 0, 0]
    },
    {
      name: 'a NetworkPolicy answered without protocol is rewritten on every InPlace pass',
      given: [policy({ podSelector: {}, policyTypes: ['Ingress'], ingress: [{ ports: [{ port: 53 }] }] })],
      expected: [1, 1, 1]
    },
    {
      name: 'a NetworkPolicy answered with every default converges',
      given: [policy({ podSelector: {}, policyTypes: ['Ingress'], ingress: [{ ports: [{ port: 53, protocol: 'TCP' }] }] })],
      expected: [1, 0, 0]
    },
    {
      name: 'a NetworkPolicy answering an empty rule list is rewritten on every InPlace pass',
      given: [policy({ podSelector: {}, policyTypes: ['Ingress'], ingress: [] })],
      expected: [1, 1, 1]
    },
    {
      name: 'a Secret answered with stringData is rewritten on every InPlace pass',
      given: [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { token: 'x' } }],
      expected: [1, 1, 1]
    },
    {
      name: 'a Secret answered with base64 data converges',
      given: [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, type: 'Opaque', data: { token: 'eA==' } }],
      expected: [1, 0, 0]
    },
    {
      name: 'a Pod answering its own tolerations is never updated under OnDelete',
      given: [pod({ containers: [container()], tolerations: [{ key: 'gpu', operator: 'Exists' }] })],
      expected: [1, 0, 0]
    }
  ]
  for (const row of convergence)
    t.test(row.name, async (t) =>
      t.same(
        passes(row.given, row.expected.length).map((r) => r.writes),
        row.expected
      )
    )
  t.test('a Pod answering its own tolerations loops under Recreate: delete, create, delete', async (t) => {
    const results = passes([pod({ containers: [container()], tolerations: [{ key: 'gpu', operator: 'Exists' }] })], 4, {
      methods: { 'Pod.v1': 'Recreate' }
    })
    t.same(
      results.map((r) => r.operations),
      [['create Pod.v1 ns/p'], ['delete (Recreate) Pod.v1 ns/p'], ['create Pod.v1 ns/p'], ['delete (Recreate) Pod.v1 ns/p']]
    )
  })
  t.test('a Service answering two protocols on one port fails its next update', async (t) => {
    const answer = [
      service({
        type: 'NodePort',
        ports: [
          { name: 'dns', port: 53, protocol: 'TCP' },
          { name: 'dns-udp', port: 53, protocol: 'UDP' }
        ]
      })
    ]
    const [first] = passes(answer, 1)
    t.throws(
      () =>
        simulateMetacontroller({ parent, observed: first?.observed ?? {}, desired: answer, methods, server: new FakeServer({ seed: 9 }) }),
      /Service.v1 ns\/web: Invalid: spec.ports\[1\].name: Duplicate value: "dns-udp"/
    )
  })
  t.test('OnDelete never updates', async (t) => {
    const [first] = passes([pod({ containers: [container()] })], 1)
    const result = simulateMetacontroller({
      parent,
      observed: first?.observed ?? {},
      desired: [pod({ containers: [container({ image: 'x:2' })] })],
      methods,
      server: new FakeServer()
    })
    t.equal(result.writes, 0)
    t.same(result.operations, ['unchanged (OnDelete) Pod.v1 ns/p'])
  })
  t.test('owned children left out of the answer are deleted and their node ports freed', async (t) => {
    const server = new FakeServer()
    const first = simulateMetacontroller({
      parent,
      observed: {},
      desired: [service({ type: 'NodePort', ports: [{ port: 22, nodePort: 31000 }] })],
      methods,
      server
    })
    const second = simulateMetacontroller({ parent, observed: first.observed, desired: [], methods, server })
    t.same(second.operations, ['delete Service.v1 ns/web'])
    t.same(second.observed['Service.v1'], {})
    t.doesNotThrow(() => defaultOnCreate(service({ type: 'NodePort', ports: [{ port: 22, nodePort: 31000 }] }, 'other'), server))
  })
  t.test('a child pending deletion is neither updated nor deleted', async (t) => {
    const [first] = passes([service({ ports: [{ port: 80 }] })], 1)
    const observed = structuredClone(first?.observed ?? {})
    ;((observed['Service.v1']?.['ns/web'] as JsonObject).metadata as JsonObject).deletionTimestamp = '2026-01-01T00:00:01Z'
    t.equal(simulateMetacontroller({ parent, observed, desired: [], methods, server: new FakeServer() }).writes, 0)
    t.equal(
      simulateMetacontroller({ parent, observed, desired: [service({ ports: [{ port: 81 }] })], methods, server: new FakeServer() }).writes,
      0
    )
  })
  t.test('a same-named object Metacontroller does not own is never touched', async (t) => {
    const foreign = { 'Service.v1': { 'ns/web': defaultOnCreate(service({ ports: [{ port: 1 }] }), new FakeServer()) } }
    const result = simulateMetacontroller({
      parent,
      observed: {},
      desired: [service({ ports: [{ port: 80 }] })],
      methods,
      server: new FakeServer(),
      foreign
    })
    t.same(result.operations, ['create refused (AlreadyExists) Service.v1 ns/web'])
    t.equal(result.writes, 0)
  })
  t.test('a child whose controller-uid label names another parent fails the sync', async (t) => {
    const child = { ...service({ ports: [{ port: 80 }] }), metadata: { name: 'web', labels: { 'controller-uid': 'other' } } }
    t.throws(() => passes([child], 1), /don't match parent selector/)
  })
  t.test('a decorator marks attachments with its annotation instead of the label', async (t) => {
    const [first] = passes([policy({ podSelector: {} })], 1, { decorator: 'gpuhooks-isolation' })
    const created = first?.observed['NetworkPolicy.networking.k8s.io/v1']?.['ns/np'] as JsonObject
    t.equal((at(created, 'metadata.annotations') as JsonObject)[DECORATOR_ANNOTATION], 'gpuhooks-isolation')
    t.equal(at(created, 'metadata.labels'), undefined)
  })
  t.test("a child without a namespace gets the parent's", async (t) => {
    const [first] = passes([{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } }], 1)
    t.ok(first?.observed['Service.v1']?.['ns/web'])
  })
})

t.test('property: any Service answer with unique port names and numbers converges in one pass', async (t) => {
  const portsArb = fc.uniqueArray(
    fc.record(
      { port: fc.integer({ min: 1, max: 6 }), protocol: fc.constantFrom('TCP', 'UDP', 'SCTP'), targetPort: fc.constantFrom(8080, 'http') },
      { requiredKeys: ['port'] }
    ),
    { selector: (p) => p.port, minLength: 1, maxLength: 4 }
  )
  fc.assert(
    fc.property(fc.constantFrom('ClusterIP', 'NodePort'), portsArb, fc.integer({ min: 1, max: 1000 }), (type, ports, seed) => {
      const answer = [service({ type, ports: ports.map((p) => ({ ...p, name: `p${p.port}` })) })]
      const server = new FakeServer({ seed })
      const first = simulateMetacontroller({ parent, observed: {}, desired: answer, methods, server })
      return simulateMetacontroller({ parent, observed: first.observed, desired: answer, methods, server }).writes === 0
    })
  )
  t.pass('holds for every generated case')
})
