/**
 * Hostile names and shapes: every lookup by a request-chosen key finds only what was observed
 * (names such as `constructor` are members of every JavaScript object), and related objects or
 * children stored in an unexpected shape are reported in status, never thrown on.
 */
import t from 'tap'
import type { InstanceSyncRequest } from '../../hooks/instance/request.ts'
import { sync as syncHook } from '../../hooks/instance/sync.ts'
import { finalize } from '../../hooks/instance/finalize.ts'
import { customize } from '../../hooks/instance/customize.ts'
import { readInstanceType, readView } from '../../hooks/instance/request.ts'
import { podAccelerator, statusPorts } from '../../hooks/instance/status.ts'
import { reviewInstance } from '../../hooks/instance/admission.ts'
import { admissionResponse } from '../../hooks/admission/review.ts'
import { annotationOf, labelOf, ownValue, sortedRecord, type KubeObject } from '../../hooks/k8s/objects.ts'
import { canonicalJson } from '../../hooks/k8s/hash.ts'
import { keepAsIs } from '../../hooks/metacontroller/keep.ts'
import { observedObject, observedOfType, LAST_APPLIED_ANNOTATION } from '../../hooks/metacontroller/observed.ts'
import type { TypedObjects } from '../../hooks/metacontroller/schemas.ts'
import { PRIVILEGED, builtPod, sshRelated } from '../support/instance-requests.ts'
import {
  NAME,
  NOW,
  NS,
  POD_STATUS,
  baseSpec,
  instance,
  instanceType,
  keySecret,
  namespaceObject,
  observedPod,
  observedService,
  request,
  setting
} from './fixtures/instance.ts'

/** Names that are members of every object, or of Object.prototype itself. */
const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'] as const
/** Of those, the ones that are also valid Kubernetes object names (DNS labels). */
const DNS_PROTOTYPE_NAMES = ['constructor'] as const

function sync(req: InstanceSyncRequest): { children: KubeObject[]; status: Record<string, unknown> } {
  const answer = syncHook(req, NOW)
  return { children: answer.children, status: answer.status }
}
const kinds = (children: readonly KubeObject[]): string[] => children.map((c) => `${c.kind}/${c.metadata.name}`)
const condition = (status: Record<string, unknown>, type: string): Record<string, unknown> | undefined =>
  (status.conditions as Array<Record<string, unknown>>).find((c) => c.type === type)

/** An object whose only own key is `key` (JSON.parse makes `__proto__` an own key, as a request body does). */
function withOwnKey(key: string, value: unknown): Record<string, unknown> {
  return JSON.parse(`{${JSON.stringify(key)}: ${JSON.stringify(value)}}`) as Record<string, unknown>
}

t.test('own-property lookups', async (t) => {
  for (const name of PROTOTYPE_NAMES) {
    t.test(`observedObject finds no object named ${name} unless one was observed`, async (t) => {
      const objects = { 'Pod.v1': { 'team-a/p': { metadata: { name: 'p' } } } } as unknown as TypedObjects
      t.equal(observedObject(objects, 'Pod.v1', name), undefined)
      t.equal(observedObject(objects, name, 'team-a/p'), undefined, 'as a type key')
      t.strictSame(observedOfType(objects, name), [], 'observedOfType by that type key')
      const own = { 'Pod.v1': withOwnKey(name, { metadata: { name } }) } as unknown as TypedObjects
      t.strictSame(
        observedObject(own, 'Pod.v1', name),
        { apiVersion: 'v1', kind: 'Pod', metadata: { name } },
        'one observed by that name is found'
      )
    })
    t.test(`labelOf, annotationOf and ownValue read no inherited ${name}`, async (t) => {
      const object: KubeObject = { metadata: { name: 'x', labels: { a: 'b' }, annotations: { c: 'd' } } }
      t.equal(labelOf(object, name), undefined)
      t.equal(annotationOf(object, name), undefined)
      t.equal(ownValue({}, name), undefined)
      t.equal(labelOf({ metadata: { name: 'x', labels: withOwnKey(name, 'v') as Record<string, string> } }, name), 'v')
    })
    t.test(`sortedRecord keeps a key named ${name} as an own key`, async (t) => {
      const sorted = sortedRecord({ ...withOwnKey(name, 'v'), a: 'b' })
      t.strictSame(Object.keys(sorted), [name, 'a'].sort())
      t.ok(Object.hasOwn(sorted, name))
      t.equal(Object.getPrototypeOf(sorted), Object.prototype, 'the prototype is untouched')
    })
  }
  t.test('canonicalJson keeps a __proto__ key and the hash depends on it', async (t) => {
    t.equal(canonicalJson(withOwnKey('__proto__', { b: 1 })), '{"__proto__":{"b":1}}')
  })
})

t.test('an Instance whose spec.type is a prototype name has no InstanceType and gets no Pod', async (t) => {
  for (const name of PROTOTYPE_NAMES) {
    t.test(name, async (t) => {
      const answer = sync(request({ parent: instance(baseSpec({ type: name, resources: { accelerator: { count: 8 } } })) }))
      t.strictSame(kinds(answer.children), [])
      t.strictSame(
        { status: condition(answer.status, 'SpecValid')?.status, reason: condition(answer.status, 'SpecValid')?.reason },
        { status: 'False', reason: 'InstanceTypeNotFound' }
      )
      t.equal(answer.status.phase, 'Failed')
    })
  }
  t.test('a running Pod is kept while spec.type names nothing, and a stored one with 8 GPUs is never rendered', async (t) => {
    const pod = observedPod(builtPod(baseSpec()), POD_STATUS.running, { node: 'n' })
    const answer = sync(request({ parent: instance(baseSpec({ type: 'constructor' }), { generation: 2 }), children: [pod] }))
    t.strictSame(answer.children, [keepAsIs(pod)])
  })
})

t.test('an InstanceType really named constructor is found and used', async (t) => {
  const related = [instanceType({ families: ['Whole'], nodeSelector: { pool: 'gpu' } }, 'constructor'), namespaceObject()]
  const answer = sync(request({ parent: instance(baseSpec({ type: 'constructor' })), related }))
  t.strictSame(kinds(answer.children), ['Pod/ws'])
  t.strictSame((answer.children[0]?.spec as { nodeSelector?: unknown }).nodeSelector, { pool: 'gpu' })
  t.equal(answer.children[0]?.metadata.labels?.['worker.gpustack.ai/instance-type'], 'constructor')
})

t.test('an Instance in a namespace named constructor reads no Namespace it was not given', async (t) => {
  for (const ns of DNS_PROTOTYPE_NAMES) {
    const req = request({ related: [instanceType()] })
    req.parent.metadata.namespace = ns
    const view = readView(req)
    t.equal(view.namespaceObject, undefined)
    const answer = sync(req)
    t.strictSame(kinds(answer.children), ['Pod/ws'])
    t.equal(answer.children[0]?.metadata.namespace, ns)
  }
})

t.test('an SSH key Secret named constructor that does not exist is SSHKeyMissing', async (t) => {
  for (const name of DNS_PROTOTYPE_NAMES) {
    const answer = sync(
      request({
        parent: instance(baseSpec({ sshPublicKey: { name } })),
        related: [instanceType(), namespaceObject(PRIVILEGED)]
      })
    )
    t.equal(condition(answer.status, 'SpecValid')?.reason, 'SSHKeyMissing')
    t.strictSame(kinds(answer.children), [])
  }
  t.test('a Secret whose data has no authorized_keys but inherited names is SSHKeyMissing', async (t) => {
    const secret = keySecret('keys')
    secret.data = { toString: 'x', constructor: 'y' }
    const answer = sync(
      request({
        parent: instance(baseSpec({ sshPublicKey: { name: 'keys' } })),
        related: sshRelated({ namespaceLabels: PRIVILEGED, key: secret })
      })
    )
    t.equal(condition(answer.status, 'SpecValid')?.reason, 'SSHKeyMissing')
    t.match(condition(answer.status, 'SpecValid')?.message, /has no key authorized_keys \(it has constructor, toString\)/)
  })
})

t.test('ports named after prototype members are named as the spec names them', async (t) => {
  const spec = baseSpec({
    ports: [
      { port: 8888, name: 'constructor' },
      { port: 9000, name: 'tostring' }
    ]
  })
  const service = observedService([
    { port: 8888, nodePort: 31000 },
    { port: 9000, nodePort: 31001 }
  ])
  t.strictSame(
    statusPorts(service, spec).map((p) => p.name),
    ['constructor', 'tostring']
  )
  t.strictSame(
    statusPorts(service, baseSpec()).map((p) => p.name),
    ['tcp-8888', 'tcp-9000'],
    'names absent from the spec fall back to the identity'
  )
})

t.test('a namespace label or Pod Security level named after a prototype member is not inherited', async (t) => {
  const ns = namespaceObject()
  ns.metadata.labels = withOwnKey('constructor', 'x') as Record<string, string>
  const answer = sync(request({ related: [instanceType(), ns] }))
  t.equal(condition(answer.status, 'SpecValid')?.status, 'True')
})

t.test('accelerator resources keyed by prototype names are reported as own keys', async (t) => {
  const pod: KubeObject = {
    metadata: { name: NAME },
    spec: {
      containers: [
        { name: 'main', resources: { limits: withOwnKey('__proto__', '1'), requests: { 'nvidia.com/gpu': '1', 'x/constructor': '2' } } }
      ]
    }
  }
  const accel = podAccelerator(pod, baseSpec({ resources: { accelerator: { count: 1 } } }))
  t.strictSame(accel?.resources, { 'nvidia.com/gpu': '1', 'x/constructor': '2' })
})

t.test('an InstanceType nodeSelector with a __proto__ key keeps it as a key on the Pod', async (t) => {
  const pod = builtPod(baseSpec(), { type: { families: ['Whole'], nodeSelector: withOwnKey('__proto__', 'x') } })
  const selector = (pod.spec as { nodeSelector: Record<string, string> }).nodeSelector
  t.ok(Object.hasOwn(selector, '__proto__'))
  t.equal(Object.getPrototypeOf(selector), Object.prototype)
})

t.test('customize relates only what the spec names, whatever the name', async (t) => {
  for (const name of PROTOTYPE_NAMES) {
    const rules = customize({ parent: instance(baseSpec({ type: name, sshPublicKey: { name } })) }).relatedResources
    t.strictSame(rules.find((r) => r.resource === 'instancetypes')?.names, [name])
    t.strictSame(rules.find((r) => r.resource === 'secrets')?.names, [name])
  }
})

t.test('admission compares every spec field by own property', async (t) => {
  const old = { metadata: { name: NAME }, spec: { ...baseSpec(), constructor: 1 }, status: { podName: NAME } }
  const next = { metadata: { name: NAME }, spec: baseSpec() }
  const verdict = reviewInstance({
    uid: 'u',
    kind: { group: 'worker.gpustack.ai', version: 'v1alpha1', kind: 'Instance' },
    operation: 'UPDATE',
    object: next,
    oldObject: old
  })
  t.match(verdict.problems, [/spec.constructor cannot change while the Instance is running/])
})

t.test('related objects of an unexpected shape', async (t) => {
  const rows: Array<{ name: string; spec: unknown; message: RegExp }> = [
    {
      name: 'families a string where a list is expected',
      spec: { families: 'Whole' },
      message: /InstanceType a100 spec.families Whole is invalid: expected array/
    },
    {
      name: 'maxCount a string where a number is expected',
      spec: { families: ['Whole'], maxCount: '8' },
      message: /InstanceType a100 spec.maxCount 8 is invalid: expected integer/
    },
    {
      name: 'nodeSelector with a number value',
      spec: { nodeSelector: { pool: 5 } },
      message: /InstanceType a100 spec.nodeSelector.pool 5 is invalid: expected string/
    },
    {
      name: 'tolerations an object',
      spec: { tolerations: { key: 'gpu' } },
      message: /InstanceType a100 spec.tolerations \{"key":"gpu"\} is invalid: expected array/
    },
    { name: 'spec a string', spec: 'big', message: /InstanceType a100 spec must be an object, not big/ }
  ]
  for (const row of rows) {
    t.test(`an InstanceType with ${row.name} is a spec error naming the InstanceType and the field; the Pod is kept`, async (t) => {
      const type = instanceType({})
      type.spec = row.spec
      const pod = observedPod(builtPod(baseSpec()), POD_STATUS.running, { node: 'n' })
      const answer = sync(request({ related: [type, namespaceObject()], children: [pod] }))
      t.strictSame(answer.children, [keepAsIs(pod)])
      const specValid = condition(answer.status, 'SpecValid')
      t.equal(specValid?.reason, 'InstanceTypeInvalid')
      t.match(specValid?.message, row.message)
      t.match(specValid?.message, /^spec.type a100: InstanceType a100 is stored in a shape the hooks cannot use/)
      t.equal(sync(request({ related: [type, namespaceObject()] })).children.length, 0, 'and no Pod is built without one')
    })
  }
  t.test('readInstanceType spells out at most five bad fields', async (t) => {
    const read = readInstanceType(
      'x',
      instanceType({ families: 1, maxCount: 'a', nodeSelector: 2, tolerations: 3, runtimeClassName: 4, manufacturer: 5, resourceName: 6 })
    )
    t.equal(read.state, 'invalid')
    if (read.state === 'invalid') {
      t.equal(read.errors.length, 6)
      t.equal(read.errors[5], 'and 2 more')
    }
  })
  t.test('an SSH image Setting whose value is not a string is SettingInvalid', async (t) => {
    const bad = setting('instance-ssh-server-image', 'x')
    bad.value = 5
    const answer = sync(
      request({
        parent: instance(baseSpec({ sshPublicKey: { name: 'keys' } })),
        related: sshRelated({ namespaceLabels: PRIVILEGED, extra: [bad] })
      })
    )
    t.equal(condition(answer.status, 'SpecValid')?.reason, 'SettingInvalid')
    t.match(
      condition(answer.status, 'SpecValid')?.message,
      /Setting instance-ssh-server-image value must be a string \(an image reference\), not 5/
    )
    t.strictSame(kinds(answer.children), [])
  })
  t.test('a Secret whose data is a string is SSHKeyMissing', async (t) => {
    const secret = keySecret('keys')
    secret.data = 'authorized_keys'
    const answer = sync(
      request({
        parent: instance(baseSpec({ sshPublicKey: { name: 'keys' } })),
        related: sshRelated({ namespaceLabels: PRIVILEGED, key: secret })
      })
    )
    t.equal(condition(answer.status, 'SpecValid')?.reason, 'SSHKeyMissing')
  })
  t.test('observed children of odd shapes: status reads them defensively and keeps them', async (t) => {
    const pod: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: NAME, namespace: NS },
      spec: 'x',
      status: { phase: 5, conditions: 'Ready', containerStatuses: [null, 3] }
    }
    const service: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: NAME, namespace: NS }, spec: { ports: 'all' } }
    const claim: KubeObject = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: `${NAME}-workspace`, namespace: NS, annotations: { 'volume.kubernetes.io/selected-node': 7 } as never },
      spec: { resources: 'all', storageClassName: ['x'] },
      status: { phase: { Bound: true }, capacity: { storage: 'lots' } }
    }
    const persistent = { workspace: { persistent: { size: '1Gi' } } }
    const answer = sync(request({ parent: instance(baseSpec({ type: 'missing', ...persistent })), children: [pod, service, claim] }))
    t.strictSame(answer.children, [keepAsIs(pod), keepAsIs(service), keepAsIs(claim)])
    t.equal(condition(answer.status, 'SpecValid')?.reason, 'InstanceTypeNotFound')
    t.same(answer.status.workspace, {
      claimName: `${NAME}-workspace`,
      message: `PersistentVolumeClaim ${NAME}-workspace is Pending: it names no StorageClass and the cluster has no default one, so only a PersistentVolume of no class can bind it.`
    })
    const valid = sync(request({ parent: instance(baseSpec(persistent)), children: [service, claim] }))
    t.strictSame(
      valid.children.find((c) => c.kind === 'PersistentVolumeClaim'),
      keepAsIs(claim),
      'a valid spec keeps an unreadable claim as observed'
    )
    const finalized = finalize(request({ parent: instance(baseSpec()), children: [pod, service, claim] }), NOW)
    t.strictSame(finalized.children, [keepAsIs(service)])
  })
  t.test('a last-applied record nested past the bound is no record: the child is kept as observed', async (t) => {
    const pod = observedPod(builtPod(baseSpec()), POD_STATUS.running)
    const deep = `${'['.repeat(100000)}${']'.repeat(100000)}`
    ;(pod.metadata.annotations as Record<string, string>)[LAST_APPLIED_ANNOTATION] = deep
    const kept = keepAsIs(pod)
    t.strictSame(
      Object.keys(kept.metadata.annotations ?? {}).sort(),
      ['worker.gpustack.ai/instance-generation', 'worker.gpustack.ai/pod-hash'],
      'the record is dropped, not parsed'
    )
    t.equal(kept.metadata.uid, undefined)
    t.doesNotThrow(() => JSON.stringify(kept))
  })
})

t.test('hundreds of bad entries: SpecValid spells out twenty and counts the rest', async (t) => {
  const env = Array.from({ length: 200 }, () => ({ name: 'SAME', value: 'x' }))
  const answer = sync(request({ parent: instance(baseSpec({ env })) }))
  const message = String(condition(answer.status, 'SpecValid')?.message)
  t.equal(message.match(/is also the name of/g)?.length, 20)
  t.match(message, /; and 179 more problems\.$/)
  const verdict = reviewInstance({
    uid: 'u',
    kind: { group: 'worker.gpustack.ai', version: 'v1alpha1', kind: 'Instance' },
    operation: 'CREATE',
    object: { metadata: { name: NAME }, spec: baseSpec({ env }) }
  })
  t.equal(verdict.problems.length, 199, 'the verdict keeps every problem')
})

t.test('an admission denial spells out twenty problems and counts the rest', async (t) => {
  const problems = Array.from({ length: 25 }, (_, i) => `p${i}`)
  const message = admissionResponse('u', { problems }).response.status?.message
  t.equal(message, `${problems.slice(0, 20).join('; ')}; and 5 more`)
})
