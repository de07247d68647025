import t from 'tap'
import { DEFAULT_SSH_SERVER_IMAGE } from '../../hooks/api/setting.ts'
import type { InstanceSyncRequest } from '../../hooks/instance/request.ts'
import { sync as syncHook } from '../../hooks/instance/sync.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { contentHash } from '../../hooks/k8s/hash.ts'
import { reversedKeys } from '../support/fields.ts'
import { TYPE_SPEC, builtPod, sshRelated } from '../support/instance-requests.ts'
import {
  NAME,
  NOW,
  NS,
  POD_STATUS,
  TYPE,
  baseSpec,
  instance,
  instanceType,
  namespaceObject,
  observedPod,
  observedService,
  request,
  secret,
  setting
} from './fixtures/instance.ts'

/** The sync hook, children typed as the open objects they are. */
function sync(req: InstanceSyncRequest, now: Date): { children: KubeObject[]; status: Record<string, unknown> } {
  const answer = syncHook(req, now)
  return { ...answer, children: answer.children }
}

/**
 * The Pod of `baseSpec(extra)` at `generation`, written out from docs/instance.md ("The Pod"): the
 * Instance's labels, the generation it was built from, main with the image and a workspace, no
 * service-account token or service links. The pod-hash is the content hash of the rest.
 */
function expectedPod(generation: number, ports: number[] = []): KubeObject {
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'ws',
      namespace: 'team-a',
      labels: {
        'app.kubernetes.io/part-of': 'ws',
        'app.kubernetes.io/managed-by': 'gpuhooks',
        'resource.gpustack.ai/type': 'instances',
        'worker.gpustack.ai/instance-type': 'a100'
      },
      annotations: { 'worker.gpustack.ai/instance-generation': String(generation) }
    },
    spec: {
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'main',
          image: 'quay.io/jupyter/base-notebook:2025-01-01',
          imagePullPolicy: 'IfNotPresent',
          ...(ports.length > 0 ? { ports: ports.map((p) => ({ containerPort: p, protocol: 'TCP' })) } : {}),
          volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }]
        }
      ],
      enableServiceLinks: false,
      restartPolicy: 'Always',
      volumes: [{ name: 'workspace', emptyDir: {} }]
    }
  }
  ;(pod.metadata.annotations as Record<string, string>)['worker.gpustack.ai/pod-hash'] = contentHash(pod)
  return pod
}

/** A child as Metacontroller last applied it (the fixture records it): what "kept as it is" answers. */
const recorded = (o: KubeObject): KubeObject =>
  JSON.parse(o.metadata.annotations?.['metacontroller.k8s.io/last-applied-configuration'] ?? 'null') as KubeObject

const kinds = (children: readonly KubeObject[]): string[] => children.map((c) => `${c.kind}/${c.metadata.name}`)
const condition = (status: Record<string, unknown>, type: string): Record<string, unknown> | undefined =>
  (status.conditions as Array<Record<string, unknown>>).find((c) => c.type === type)
const brief = (c: Record<string, unknown> | undefined): unknown => (c === undefined ? undefined : { status: c.status, reason: c.reason })

const ports = { ports: [{ port: 8888 }] }
const sshSpec = baseSpec({ ...ports, sshPublicKey: { name: 'keys' } })

t.test('a new running Instance gets its Pod and its Service', async (t) => {
  const spec = baseSpec(ports)
  const answer = sync(request({ parent: instance(spec) }), NOW)
  t.strictSame(kinds(answer.children), ['Pod/ws', 'Service/ws'])
  t.strictSame(answer.children[0], expectedPod(1, [8888]))
  t.strictSame((answer.children[1]?.spec as { ports: unknown }).ports, [
    { name: 'tcp-8888', port: 8888, protocol: 'TCP', targetPort: 8888 }
  ])
  t.strictSame([answer.status.phase, brief(condition(answer.status, 'SpecValid'))], ['Pending', { status: 'True', reason: 'Valid' }])
})

t.test('an Instance without ports or SSH gets a Pod and no Service', async (t) => {
  t.strictSame(kinds(sync(request(), NOW).children), ['Pod/ws'])
})

t.test('the answer carries exactly children and status', async (t) => {
  t.strictSame(Object.keys(sync(request(), NOW)).sort(), ['children', 'status'])
})

t.test('the Service selects the labels the Pod carries', async (t) => {
  const [pod, svc] = sync(request({ parent: instance(baseSpec(ports)) }), NOW).children
  const selector = (svc?.spec as { selector: Record<string, string> }).selector
  t.strictSame(Object.keys(selector).length, 2)
  for (const [k, v] of Object.entries(selector)) t.equal(pod?.metadata.labels?.[k], v, k)
})

t.test('a live Pod of the current generation is kept as it is', async (t) => {
  const spec = baseSpec(ports)
  const pod = observedPod(builtPod(spec, { generation: 4 }), POD_STATUS.running, { node: 'gpu-1' })
  const answer = sync(
    request({ parent: instance(spec, { generation: 4 }), children: [pod, observedService([{ port: 8888, nodePort: 31001 }])] }),
    NOW
  )
  t.strictSame(answer.children[0], expectedPod(4, [8888]), 'the Pod as applied, without what the API server added')
  t.strictSame([answer.status.phase, answer.status.accessAddresses], ['Running', ['192.0.2.7:31001']])
  t.strictSame(brief(condition(answer.status, 'UpToDate')), { status: 'True', reason: 'UpToDate' })
})

const replaced: Array<{ name: string; pod: KubeObject; message: string; upToDate: unknown }> = [
  {
    name: 'a Pod built from an older generation is left out and none is rendered this round',
    pod: observedPod(builtPod(baseSpec()), POD_STATUS.running, { node: 'gpu-1' }),
    message: 'Replacing Pod ws: it was built from generation 1 and the spec is at generation 2.',
    upToDate: { status: 'False', reason: 'SpecChanged' }
  },
  {
    name: 'a Pod that ended (Failed, evicted) is left out',
    pod: observedPod(builtPod(baseSpec(), { generation: 2 }), POD_STATUS.evicted, { node: 'gpu-1' }),
    message: 'Replacing Pod ws: it ended with phase Failed (Evicted).',
    upToDate: { status: 'True', reason: 'UpToDate' }
  },
  {
    name: 'a Pod that ended (Succeeded) is left out',
    pod: observedPod(builtPod(baseSpec(), { generation: 2 }), { phase: 'Succeeded' }, { node: 'gpu-1' }),
    message: 'Replacing Pod ws: it ended with phase Succeeded.',
    upToDate: { status: 'True', reason: 'UpToDate' }
  },
  {
    name: 'a Pod being deleted by hand is left out',
    pod: observedPod(builtPod(baseSpec(), { generation: 2 }), POD_STATUS.running, { node: 'gpu-1', deleting: true }),
    message: 'Replacing Pod ws: it is being deleted.',
    upToDate: { status: 'True', reason: 'UpToDate' }
  },
  {
    name: 'a Pod without a generation annotation counts as outdated',
    pod: observedPod({ ...builtPod(baseSpec(), { generation: 2 }), metadata: { name: NAME, namespace: NS } }, POD_STATUS.running),
    message: 'Replacing Pod ws: it was built from generation unknown and the spec is at generation 2.',
    upToDate: { status: 'False', reason: 'SpecChanged' }
  }
]
for (const row of replaced) {
  t.test(row.name, async (t) => {
    const answer = sync(request({ parent: instance(baseSpec(), { generation: 2 }), children: [row.pod] }), NOW)
    t.strictSame(answer.children, [])
    t.strictSame([answer.status.phase, answer.status.message], ['Pending', row.message])
    t.strictSame(brief(condition(answer.status, 'UpToDate')), row.upToDate)
  })
}

t.test('once the old Pod is gone a new one is built for the current generation', async (t) => {
  const answer = sync(request({ parent: instance(baseSpec(), { generation: 2 }) }), NOW)
  t.strictSame(answer.children, [expectedPod(2)])
  t.equal(answer.children[0]?.metadata.annotations?.['worker.gpustack.ai/instance-generation'], '2')
})

t.test('an InstanceType change keeps the running Pod and reports InstanceTypeChanged', async (t) => {
  const pod = observedPod(builtPod(baseSpec(), { type: { ...TYPE_SPEC, nodeSelector: { pool: 'old' } } }), POD_STATUS.running, {
    node: 'gpu-1'
  })
  const answer = sync(request({ children: [pod] }), NOW)
  t.strictSame(answer.children, [recorded(pod)])
  t.strictSame(brief(condition(answer.status, 'UpToDate')), { status: 'False', reason: 'InstanceTypeChanged' })
  t.equal(answer.status.phase, 'Running')
})

t.test('an SSH image Setting change keeps the running Pod and reports SettingChanged', async (t) => {
  const pod = observedPod(builtPod(sshSpec, { sshImage: 'sshd:1' }), POD_STATUS.running, { node: 'gpu-1' })
  const related = sshRelated({ extra: [setting('instance-ssh-server-image', 'sshd:2')] })
  const answer = sync(request({ parent: instance(sshSpec), children: [pod], related }), NOW)
  t.strictSame(kinds(answer.children), ['Pod/ws', 'Service/ws'])
  t.strictSame(answer.children[0], recorded(pod))
  t.strictSame(brief(condition(answer.status, 'UpToDate')), { status: 'False', reason: 'SettingChanged' })
})

const images: Array<{ name: string; related: KubeObject[]; expected: string }> = [
  {
    name: 'the SSH image comes from the Setting instance-ssh-server-image',
    related: [setting('instance-ssh-server-image', ' registry.example/sshd:9 ')],
    expected: 'registry.example/sshd:9'
  },
  { name: 'the SSH image is the published default without the Setting', related: [], expected: DEFAULT_SSH_SERVER_IMAGE },
  {
    name: 'the SSH image is the published default when the Setting is blank',
    related: [setting('instance-ssh-server-image', '  ')],
    expected: DEFAULT_SSH_SERVER_IMAGE
  }
]
for (const row of images) {
  t.test(row.name, async (t) => {
    const answer = sync(request({ parent: instance(sshSpec), related: sshRelated({ extra: row.related }) }), NOW)
    const containers = (answer.children[0]?.spec as { containers: Array<{ name: string; image: string }> }).containers
    t.equal(containers.find((c) => c.name === 'sshd')?.image, row.expected)
  })
}

t.test('SSH adds the ssh port to the Service', async (t) => {
  const answer = sync(request({ parent: instance(sshSpec), related: sshRelated() }), NOW)
  t.strictSame(
    (answer.children[1]?.spec as { ports: Array<{ name: string }> }).ports.map((p) => p.name),
    ['tcp-8888', 'ssh']
  )
})

t.test('stopping leaves the Pod out and keeps the Service', async (t) => {
  const spec = baseSpec({ ...ports, stop: true })
  const pod = observedPod(builtPod(baseSpec(ports)), POD_STATUS.running, { node: 'gpu-1' })
  const svc = observedService([{ port: 8888, nodePort: 31001 }])
  const answer = sync(request({ parent: instance(spec, { generation: 2 }), children: [pod, svc] }), NOW)
  t.strictSame(kinds(answer.children), ['Service/ws'])
  t.strictSame((answer.children[0]?.spec as { ports: unknown }).ports, [
    { name: 'tcp-8888', port: 8888, protocol: 'TCP', targetPort: 8888, nodePort: 31001 }
  ])
  t.equal(answer.status.phase, 'Stopping')
})

t.test('stopped with no Pod observed is phase Stopped', async (t) => {
  const answer = sync(
    request({ parent: instance(baseSpec({ ...ports, stop: true })), children: [observedService([{ port: 8888, nodePort: 31001 }])] }),
    NOW
  )
  t.strictSame([kinds(answer.children), answer.status.phase], [['Service/ws'], 'Stopped'])
})

/** Spec errors: nothing is created or deleted; SpecValid says why. */
const errors: Array<{ name: string; spec?: Record<string, unknown>; related?: KubeObject[]; reason: string; message?: RegExp }> = [
  { name: 'an invalid spec is InvalidSpec', spec: { type: TYPE }, reason: 'InvalidSpec', message: /spec\.image/ },
  {
    name: 'a missing InstanceType is InstanceTypeNotFound',
    related: [namespaceObject()],
    reason: 'InstanceTypeNotFound',
    message: /spec\.type a100/
  },
  {
    name: 'an accelerator the InstanceType does not offer is AcceleratorNotOffered',
    spec: baseSpec({ resources: { accelerator: { family: 'Partitioned', profile: '7g.80gb' } } }),
    reason: 'AcceleratorNotOffered',
    message: /Partitioned is not offered by InstanceType a100; offered: Whole, Shared/
  },
  {
    name: 'a missing SSH key Secret is SSHKeyMissing',
    spec: sshSpec,
    reason: 'SSHKeyMissing',
    message: /Secret team-a\/keys does not exist/
  },
  {
    name: 'a key Secret without authorized_keys is SSHKeyMissing',
    spec: sshSpec,
    related: sshRelated({ key: secret('keys', { id_rsa: 'eA==' }) }),
    reason: 'SSHKeyMissing',
    message: /has no key authorized_keys \(it has id_rsa\)/
  },
  {
    name: 'a key Secret with an empty authorized_keys is SSHKeyMissing',
    spec: sshSpec,
    related: sshRelated({ key: secret('keys', { authorized_keys: '' }) }),
    reason: 'SSHKeyMissing',
    message: /has an empty authorized_keys/
  },
  {
    name: 'a namespace enforcing Pod Security baseline refuses SSH with PodSecurityForbidsSSH',
    spec: sshSpec,
    related: sshRelated({ namespaceLabels: { 'pod-security.kubernetes.io/enforce': 'baseline' } }),
    reason: 'PodSecurityForbidsSSH',
    message: /pod-security\.kubernetes\.io\/enforce/
  },
  {
    name: "a Service of that name that is not the Instance's is ServiceNameTaken",
    spec: baseSpec(ports),
    related: [instanceType(), namespaceObject(), observedService([{ port: 80, nodePort: 30080 }])],
    reason: 'ServiceNameTaken',
    message: /Service team-a\/ws already exists and is not this Instance's/
  }
]
for (const row of errors) {
  t.test(`${row.name}, and nothing is created`, async (t) => {
    const answer = sync(
      request({ parent: instance(row.spec ?? baseSpec()), ...(row.related !== undefined ? { related: row.related } : {}) }),
      NOW
    )
    t.strictSame(answer.children, [])
    t.equal(answer.status.phase, 'Failed')
    const specValid = condition(answer.status, 'SpecValid')
    t.strictSame(brief(specValid), { status: 'False', reason: row.reason })
    if (row.message !== undefined) t.match(String(specValid?.message), row.message)
  })
  t.test(`${row.name}, and every observed child is kept unchanged`, async (t) => {
    const pod = observedPod(builtPod(baseSpec()), POD_STATUS.running, { node: 'gpu-1' })
    const svc = observedService([{ port: 8888, nodePort: 31001 }])
    // A foreign Service is related but not a child; the kept children then are the Pod only.
    const children = row.reason === 'ServiceNameTaken' ? [pod] : [pod, svc]
    const answer = sync(
      request({
        parent: instance(row.spec ?? baseSpec(), { generation: 2 }),
        children,
        ...(row.related !== undefined ? { related: row.related } : {})
      }),
      NOW
    )
    t.strictSame(answer.children, children.map(recorded))
    t.strictSame(brief(condition(answer.status, 'SpecValid')), { status: 'False', reason: row.reason })
    t.strictSame(brief(condition(answer.status, 'UpToDate')), { status: 'False', reason: 'SpecChanged' })
    t.equal(answer.status.phase, 'Running')
  })
}

t.test('every problem is reported, the first one giving the reason', async (t) => {
  const related = [namespaceObject(), observedService([{ port: 80, nodePort: 30080 }])]
  const answer = sync(request({ parent: instance(baseSpec(ports)), related }), NOW)
  const specValid = condition(answer.status, 'SpecValid')
  t.equal(specValid?.reason, 'InstanceTypeNotFound')
  t.match(String(specValid?.message), /names no InstanceType.*; Service team-a\/ws already exists/)
})

t.test('stop still stops with a spec error: the Pod goes, the Service stays exactly as it is', async (t) => {
  const pod = observedPod(builtPod(baseSpec()), POD_STATUS.running, { node: 'gpu-1' })
  const svc = observedService([{ port: 8888, nodePort: 31001 }])
  const answer = sync(request({ parent: instance({ type: TYPE, stop: true }, { generation: 2 }), children: [pod, svc] }), NOW)
  t.strictSame(answer.children, [recorded(svc)])
  t.strictSame(brief(condition(answer.status, 'SpecValid')), { status: 'False', reason: 'InvalidSpec' })
  t.equal(answer.status.phase, 'Stopping')
})

t.test('a spec error while running does not delete the Pod', async (t) => {
  const pod = observedPod(builtPod(baseSpec()), POD_STATUS.running, { node: 'gpu-1' })
  const answer = sync(request({ parent: instance({ type: TYPE, stop: false }, { generation: 2 }), children: [pod] }), NOW)
  t.strictSame(answer.children, [recorded(pod)])
})

t.test('our own Service, related as well as a child, is not a taken name', async (t) => {
  const svc = observedService([{ port: 8888, nodePort: 31001 }])
  const answer = sync(request({ parent: instance(baseSpec(ports)), children: [svc] }), NOW)
  t.strictSame(brief(condition(answer.status, 'SpecValid')), { status: 'True', reason: 'Valid' })
  t.strictSame(kinds(answer.children), ['Pod/ws', 'Service/ws'])
})

t.test('an Instance name that cannot name a Service is a spec error', async (t) => {
  const answer = sync(request({ parent: instance(baseSpec(ports), { name: '9lives' }) }), NOW)
  t.strictSame(answer.children, [])
  t.strictSame(brief(condition(answer.status, 'SpecValid')), { status: 'False', reason: 'InvalidSpec' })
})

t.test('previous transition times are carried over', async (t) => {
  const status = {
    conditions: [{ type: 'SpecValid', status: 'True', reason: 'Valid', message: 'x', lastTransitionTime: '2020-01-01T00:00:00Z' }]
  }
  const answer = sync(request({ parent: instance(baseSpec(), { status }) }), NOW)
  t.equal(condition(answer.status, 'SpecValid')?.lastTransitionTime, '2020-01-01T00:00:00Z')
})

t.test('sync is deterministic byte for byte: the order of keys in the request does not show in the answer', async (t) => {
  const children = [
    observedPod(builtPod(sshSpec), POD_STATUS.running, { node: 'gpu-1' }),
    observedService([
      { port: 8888, nodePort: 31001 },
      { port: 22, nodePort: 31002 }
    ])
  ]
  const req = request({
    parent: instance(sshSpec),
    children,
    related: sshRelated({ extra: [setting('instance-ssh-server-image', 'sshd:9')] })
  })
  const reordered = reversedKeys(req)
  t.not(JSON.stringify(reordered), JSON.stringify(req), 'the two requests differ in key order')
  t.equal(JSON.stringify(sync(reordered, NOW)), JSON.stringify(sync(req, NOW)))
})

t.test('sync does not change its request', async (t) => {
  const req = request({
    parent: instance(baseSpec(ports)),
    children: [observedPod(builtPod(baseSpec(ports)), POD_STATUS.running), observedService([{ port: 8888, nodePort: 31001 }])]
  })
  const copy = structuredClone(req)
  sync(req, NOW)
  t.strictSame(req, copy)
})

t.test('an InstanceType naming a RuntimeClass that does not exist is a spec error and renders no Pod', async (t) => {
  const type = instanceType({ families: ['Whole'], runtimeClassName: 'nvidia' })
  const missing = sync(request({ parent: instance(baseSpec()), related: [type, namespaceObject()] }), NOW)
  t.strictSame(brief(condition(missing.status, 'SpecValid')), { status: 'False', reason: 'RuntimeClassNotFound' })
  t.match(condition(missing.status, 'SpecValid')?.message, /runtimeClassName nvidia names no RuntimeClass/)
  t.strictSame(missing.children, [])
  const runtimeClass = { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'nvidia' }, handler: 'nvidia' }
  const present = sync(request({ parent: instance(baseSpec()), related: [type, namespaceObject(), runtimeClass] }), NOW)
  t.strictSame(brief(condition(present.status, 'SpecValid')), { status: 'True', reason: 'Valid' })
  t.strictSame(kinds(present.children), ['Pod/ws'])
})

t.test('a namespace enforcing Pod Security restricted is a spec error: the API server would refuse every Instance Pod', async (t) => {
  for (const level of ['restricted', 'Restricted']) {
    const answer = sync(
      request({
        parent: instance(baseSpec()),
        related: [instanceType(), namespaceObject({ 'pod-security.kubernetes.io/enforce': level })]
      }),
      NOW
    )
    t.strictSame(brief(condition(answer.status, 'SpecValid')), { status: 'False', reason: 'PodSecurityForbidsPod' }, level)
    t.match(condition(answer.status, 'SpecValid')?.message, /pod-security\.kubernetes\.io\/enforce=baseline/)
    t.strictSame(answer.children, [])
  }
  const baseline = sync(
    request({
      parent: instance(baseSpec()),
      related: [instanceType(), namespaceObject({ 'pod-security.kubernetes.io/enforce': 'baseline' })]
    }),
    NOW
  )
  t.strictSame(brief(condition(baseline.status, 'SpecValid')), { status: 'True', reason: 'Valid' })
})

t.test('in a namespace being deleted nothing new is created: a deleted Pod is not rebuilt, the Service kept', async (t) => {
  const svc = observedService([{ port: 8888, nodePort: 31001 }])
  const terminating = { ...namespaceObject(), status: { phase: 'Terminating' } }
  const answer = sync(request({ parent: instance(baseSpec(ports)), children: [svc], related: [instanceType(), terminating] }), NOW)
  t.strictSame(kinds(answer.children), ['Service/ws'], 'no new Pod')
  const noService = sync(
    request({
      parent: instance(baseSpec(ports)),
      related: [
        instanceType(),
        { ...namespaceObject(), metadata: { ...namespaceObject().metadata, deletionTimestamp: '2026-02-03T04:00:00Z' } }
      ]
    }),
    NOW
  )
  t.strictSame(noService.children, [], 'no new Pod and no new Service')
  const live = sync(request({ parent: instance(baseSpec(ports)), related: [instanceType(), namespaceObject()] }), NOW)
  t.strictSame(kinds(live.children), ['Pod/ws', 'Service/ws'], 'an active namespace gets both')
})
