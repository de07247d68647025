/**
 * What a tenant writes never decides what an answer creates (docs/metacontroller.md rule 10): for any
 * content of any annotation, label or status of any observed object (the parent, its children or
 * attachments, the related objects), every answer of the three controllers, sync and finalize,
 * valid and invalid specs, holds only objects of the types the controller declares, in the
 * parent's namespace, named as the controller names its children; and the decorator sets only its
 * one label and one annotation. The names are written out here, from docs/instance.md, docs/isolation.md
 * and docs/cellpool.md, not taken from the rules the service checks; the service's own guard must agree
 * (else the route would answer 500).
 */
import t from 'tap'
import fc from 'fast-check'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { answerViolations, type ChildRule } from '../../hooks/metacontroller/answer-guard.ts'
import { INSTANCE_CHILD_RULE } from '../../hooks/instance/answer-rule.ts'
import { ISOLATION_ATTACHMENT_RULE } from '../../hooks/isolation/answer-rule.ts'
import { CELL_POOL_CHILD_RULE } from '../../hooks/cellpool/request/answer-rule.ts'
import { sync as instanceSync } from '../../hooks/instance/sync.ts'
import { finalize as instanceFinalize } from '../../hooks/instance/finalize.ts'
import { sync as isolationSync, type IsolationSyncRequest } from '../../hooks/isolation/sync.ts'
import { buildPolicy } from '../../hooks/isolation/policy.ts'
import { sync as cellpoolSync, finalize as cellpoolFinalize } from '../../hooks/cellpool/hooks.ts'
import { poolProblems } from '../../hooks/cellpool/rules/validate.ts'
import { LAST_APPLIED_ANNOTATION } from '../../hooks/metacontroller/observed.ts'
import { PRIVILEGED, builtPod, sshRelated } from '../support/instance-requests.ts'
import {
  NOW,
  POD_STATUS,
  applied,
  baseSpec,
  instance,
  instanceType,
  observedPod,
  observedService,
  request,
  setting
} from './fixtures/instance.ts'
import { PoolWorld, poolObject, poolSpec } from './fixtures/cellpool.ts'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Request = { [key: string]: unknown }

// ---- what a tenant writes ----

const NAMES = ['ws', 'inference', 'inference-0', 'inference-1-bootstrap', 'gpustack-instance-isolation', 'team-a', 'ml', 'x']
const shortText = fc.oneof(fc.constantFrom(...NAMES, '0', '1', '01', 'true', ''), fc.string({ maxLength: 12 }))
const jsonValue: fc.Arbitrary<Json> = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>

/**
 * A last-applied record a tenant may write: an object of any kind, in any namespace, under any
 * name, with the labels of the object it is written on (so that it matches the parent's selector)
 * or others, and a role binding's fields; or any JSON; or any text.
 */
type Record_ = { object: { [key: string]: Json }; ownLabels: boolean } | { text: string }
const hostileRecord: fc.Arbitrary<Record_> = fc.oneof(
  fc
    .record({
      apiVersion: fc.constantFrom('rbac.authorization.k8s.io/v1', 'v1', 'apps/v1', 'networking.k8s.io/v1', 'cells.kubeswift.io/v1alpha1'),
      kind: fc.constantFrom('ClusterRoleBinding', 'Pod', 'Service', 'Secret', 'NetworkPolicy', 'CellNodeSet', 'SwiftGuest', 'Namespace'),
      name: fc.constantFrom(...NAMES, 'tenant-admin'),
      namespace: fc.option(fc.constantFrom('kube-system', 'team-a', 'ml', 'default'), { nil: undefined }),
      ownLabels: fc.boolean(),
      body: fc.dictionary(fc.constantFrom('spec', 'data', 'roleRef', 'subjects', 'rules', 'status'), jsonValue, { maxKeys: 3 })
    })
    .map(({ apiVersion, kind, name, namespace, ownLabels, body }) => ({
      ownLabels,
      object: {
        apiVersion,
        kind,
        metadata: { name, ...(namespace === undefined ? {} : { namespace }), labels: { x: 'y' } },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'team-a' }],
        ...body
      }
    })),
  jsonValue.map((v) => ({ text: JSON.stringify(v) })),
  fc.string({ maxLength: 30 }).map((text) => ({ text }))
)

const LABEL_KEYS = [
  'controller-uid',
  'cells.kubeswift.io/pool',
  'cells.kubeswift.io/pool-uid',
  'cells.kubeswift.io/cell',
  'cells.kubeswift.io/cell-index',
  'app.kubernetes.io/part-of',
  'resource.gpustack.ai/type',
  'gpustack.ai/holds-instances',
  'x'
]
const ANNOTATION_KEYS = [
  'worker.gpustack.ai/generation',
  'worker.gpustack.ai/pod-hash',
  'cells.kubeswift.io/template-hash',
  'metacontroller.k8s.io/decorator-controller',
  'gpustack.ai/instance-isolation',
  'x'
]

/** One change a tenant makes to one object: labels, annotations (a last-applied record among them) and status. */
interface Edit {
  target: number
  labels: Array<[string, string]>
  annotations: Array<[string, string]>
  record: Record_ | undefined
  status: { value: Json } | undefined
}

const edit: fc.Arbitrary<Edit> = fc.record({
  target: fc.nat(),
  labels: fc.array(fc.tuple(fc.constantFrom(...LABEL_KEYS), shortText), { maxLength: 4 }),
  annotations: fc.array(fc.tuple(fc.constantFrom(...ANNOTATION_KEYS), shortText), { maxLength: 3 }),
  record: fc.option(hostileRecord, { nil: undefined }),
  status: fc.option(
    jsonValue.map((value) => ({ value })),
    { nil: undefined }
  )
})

/** Every object of a request's maps and its parent, in a fixed order, to be edited in place. */
function objectsOf(req: Request): KubeObject[] {
  const out: KubeObject[] = []
  for (const holder of ['parent', 'object']) if (req[holder] !== undefined) out.push(req[holder] as KubeObject)
  for (const field of ['children', 'attachments', 'related']) {
    const maps = (req[field] ?? {}) as Record<string, Record<string, KubeObject>>
    for (const type of Object.keys(maps).sort())
      for (const key of Object.keys(maps[type] ?? {}).sort()) out.push((maps[type] ?? {})[key] as KubeObject)
  }
  return out
}

/** `base` with `edits` applied: labels and annotations set, a record written, status replaced. */
function edited(base: Request, edits: readonly Edit[]): Request {
  const req = structuredClone(base)
  const objects = objectsOf(req)
  for (const e of edits) {
    const o = objects[e.target % objects.length] as KubeObject
    const labels = { ...(o.metadata.labels ?? {}), ...Object.fromEntries(e.labels) }
    const annotations: Record<string, string> = { ...(o.metadata.annotations ?? {}), ...Object.fromEntries(e.annotations) }
    if (e.record !== undefined && 'text' in e.record) annotations[LAST_APPLIED_ANNOTATION] = e.record.text
    else if (e.record !== undefined) {
      const object = structuredClone(e.record.object)
      if (e.record.ownLabels) (object.metadata as { labels: unknown }).labels = labels
      annotations[LAST_APPLIED_ANNOTATION] = JSON.stringify(object)
    }
    o.metadata.labels = labels
    o.metadata.annotations = annotations
    if (e.status !== undefined) o.status = e.status.value
  }
  return req
}

// ---- what the controllers may answer, written out ----

interface Expected {
  field: 'children' | 'attachments'
  namespace: string
  allowed: (type: string, name: string) => boolean
  objectLabels?: string[]
  objectAnnotations?: string[]
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

function expectedFor(controller: 'instance' | 'isolation' | 'cellpool', req: Request): Expected {
  if (controller === 'isolation') {
    const ns = (req.object as KubeObject).metadata.name as string
    return {
      field: 'attachments',
      namespace: ns,
      allowed: (type, name) => type === 'NetworkPolicy.networking.k8s.io/v1' && name === 'gpustack-instance-isolation',
      objectLabels: ['gpustack.ai/holds-instances'],
      objectAnnotations: ['gpustack.ai/instance-isolation']
    }
  }
  const { name: parent, namespace } = (req.parent as KubeObject).metadata as { name: string; namespace: string }
  if (controller === 'instance')
    return {
      field: 'children',
      namespace,
      allowed: (type, name) =>
        (['Pod.v1', 'Service.v1'].includes(type) && name === parent) ||
        (type === 'ResourceClaimTemplate.resource.k8s.io/v1' && name === `${parent}-accelerator`)
    }
  const cell = `${escape(parent)}-(0|[1-9][0-9]{0,4})`
  const patterns: Record<string, RegExp> = {
    'Secret.v1': new RegExp(`^${cell}-bootstrap$`),
    'SwiftSeedProfile.seed.kubeswift.io/v1alpha1': new RegExp(`^${cell}-seed$`),
    'SwiftGuest.swift.kubeswift.io/v1alpha1': new RegExp(`^${cell}$`),
    'CellNodeSet.cells.kubeswift.io/v1alpha1': new RegExp(`^${escape(parent)}$`)
  }
  return { field: 'children', namespace, allowed: (type, name) => patterns[type]?.test(name) === true }
}

/** Why `answer` holds something its controller may not create; empty when it does not. */
function unexpected(expected: Expected, answer: Record<string, unknown>): string[] {
  const out: string[] = []
  for (const child of (answer[expected.field] ?? []) as KubeObject[]) {
    const type = `${String(child.kind)}.${String(child.apiVersion)}`
    const { name, namespace } = child.metadata
    if (namespace !== expected.namespace || typeof name !== 'string' || !expected.allowed(type, name))
      out.push(`${type} ${String(namespace)}/${String(name)}`)
    for (const field of ['roleRef', 'subjects', 'rules']) if (field in child) out.push(`${type} ${String(name)} carries ${field}`)
  }
  for (const [field, allowed] of [
    ['labels', expected.objectLabels],
    ['annotations', expected.objectAnnotations]
  ] as const) {
    for (const key of Object.keys(answer[field] ?? {})) if (!(allowed ?? []).includes(key)) out.push(`${field} ${key}`)
  }
  return out
}

// ---- the requests: each controller, sync and finalize, valid and invalid specs ----

const sshSpec = baseSpec({ ports: [{ port: 8888 }], sshPublicKey: { name: 'keys' }, resources: { accelerator: { count: 1 } } })
const pod = observedPod(builtPod(sshSpec, { sshImage: 'img' }), POD_STATUS.running, { node: 'gpu-1' })
const service = observedService([
  { port: 8888, nodePort: 31000 },
  { port: 22, name: 'ssh', nodePort: 31022 }
])
/** A Pod and a Service of other names that carry the Instance's controller-uid label (adopted by Metacontroller). */
const strays = [
  applied({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'tenant-pod', namespace: 'team-a', labels: { 'controller-uid': 'u' } } }),
  applied({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'tenant-svc', namespace: 'team-a', labels: { 'controller-uid': 'u' } } })
]
const related = sshRelated({ namespaceLabels: PRIVILEGED, extra: [setting('instance-ssh-server-image', 'img')] })
const instanceRequest = (spec: Record<string, unknown>, deleting = false): Request =>
  request({ parent: instance(spec, { deleting }), children: [pod, service, ...strays], related })

/** A DRA Instance: its type, its template as observed, and a stray template with its controller-uid label. */
const draType = instanceType({ devicePlugin: 'DRA', dra: { deviceClassName: 'gpu.nvidia.com' }, families: ['Whole', 'Shared'] })
const draRelated = sshRelated({ namespaceLabels: PRIVILEGED, extra: [setting('instance-ssh-server-image', 'img')] }).map((o) =>
  o.kind === 'InstanceType' ? draType : o
)
const draTemplate = (name: string) =>
  applied({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name, namespace: 'team-a', labels: { 'controller-uid': 'u' } },
    spec: { spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.nvidia.com' } }] } } }
  })
const draRequest = (spec: Record<string, unknown>, deleting = false): Request =>
  request({
    parent: instance(spec, { deleting }),
    children: [pod, service, draTemplate('ws-accelerator'), draTemplate('tenant-claims'), ...strays],
    related: draRelated
  })

const policy = (() => {
  const desired = buildPolicy('team-a', { ipv4: ['10.244.0.0/16'], ipv6: [] }) as KubeObject
  desired.metadata.annotations = { 'metacontroller.k8s.io/decorator-controller': 'gpuhooks-instance-isolation' }
  return applied(desired)
})()
const otherPolicy = applied({ ...policy, metadata: { ...policy.metadata, name: 'older-name' } })
function isolationRequest(value: string | undefined, terminating = false): Request {
  const req: IsolationSyncRequest = {
    object: {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team-a', uid: 'ns-uid', ...(terminating ? { deletionTimestamp: '2026-01-02T00:00:00Z' } : {}) },
      status: { phase: terminating ? 'Terminating' : 'Active' }
    },
    attachments: {
      'NetworkPolicy.networking.k8s.io/v1': { 'team-a/gpustack-instance-isolation': policy, 'team-a/older-name': otherPolicy }
    },
    related: {
      'Setting.gpustack.ai/v1alpha1':
        value === undefined ? {} : { 'instance-isolation-pod-cidrs': setting('instance-isolation-pod-cidrs', value) },
      'Instance.worker.gpustack.ai/v1alpha1': {
        'team-a/ws': { apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'Instance', metadata: { name: 'ws', namespace: 'team-a' } }
      }
    }
  }
  return req
}

const world = new PoolWorld(poolSpec({ replicas: 2, updatePolicy: { type: 'Manual' } }))
world.settle(cellpoolSync)
const poolRequest = world.request() as unknown as Request
const withPoolSpec = (change: (spec: Record<string, unknown>) => void): Request => {
  const req = structuredClone(poolRequest)
  change((req.parent as { spec: Record<string, unknown> }).spec)
  return req
}
const invalidPool = withPoolSpec((spec) => {
  spec.replicas = -1
})
const deletingPool = {
  ...structuredClone(poolRequest),
  parent: { ...structuredClone(world.parent), metadata: poolObject(poolSpec(), { deleting: '2026-03-01T09:59:00Z' }).metadata },
  finalizing: true
}

type Hook = (req: never, now: Date) => Record<string, unknown>
const cases: Array<{ name: string; controller: 'instance' | 'isolation' | 'cellpool'; rule: ChildRule; hook: Hook; base: Request }> = [
  {
    name: 'Instance sync, valid spec',
    controller: 'instance',
    rule: INSTANCE_CHILD_RULE,
    hook: instanceSync,
    base: instanceRequest(sshSpec)
  },
  {
    name: 'Instance sync, invalid spec',
    controller: 'instance',
    rule: INSTANCE_CHILD_RULE,
    hook: instanceSync,
    base: instanceRequest({ ...sshSpec, type: 'missing' })
  },
  {
    name: 'Instance sync, invalid spec, stopped',
    controller: 'instance',
    rule: INSTANCE_CHILD_RULE,
    hook: instanceSync,
    base: instanceRequest({ ...sshSpec, image: 7, stop: true })
  },
  {
    name: 'Instance finalize',
    controller: 'instance',
    rule: INSTANCE_CHILD_RULE,
    hook: instanceFinalize,
    base: instanceRequest(sshSpec, true)
  },
  {
    name: 'Instance finalize, invalid spec',
    controller: 'instance',
    rule: INSTANCE_CHILD_RULE,
    hook: instanceFinalize,
    base: instanceRequest({ image: [] }, true)
  },
  {
    name: 'Instance sync, DRA type',
    controller: 'instance',
    rule: INSTANCE_CHILD_RULE,
    hook: instanceSync,
    base: draRequest({ ...sshSpec, resources: { accelerator: { family: 'Shared', count: 2 } } })
  },
  {
    name: 'Instance sync, DRA type, invalid spec',
    controller: 'instance',
    rule: INSTANCE_CHILD_RULE,
    hook: instanceSync,
    base: draRequest({ ...sshSpec, resources: { accelerator: { family: 'Sliced', memoryMiB: 10 } } })
  },
  {
    name: 'Instance finalize, DRA type',
    controller: 'instance',
    rule: INSTANCE_CHILD_RULE,
    hook: instanceFinalize,
    base: draRequest(sshSpec, true)
  },
  {
    name: 'isolation sync, valid Setting',
    controller: 'isolation',
    rule: ISOLATION_ATTACHMENT_RULE,
    hook: isolationSync,
    base: isolationRequest('10.244.0.0/16')
  },
  {
    name: 'isolation sync, unparseable Setting',
    controller: 'isolation',
    rule: ISOLATION_ATTACHMENT_RULE,
    hook: isolationSync,
    base: isolationRequest('x, 10.0.0.0/8')
  },
  {
    name: 'isolation sync, no Setting',
    controller: 'isolation',
    rule: ISOLATION_ATTACHMENT_RULE,
    hook: isolationSync,
    base: isolationRequest(undefined)
  },
  {
    name: 'isolation sync, namespace being deleted',
    controller: 'isolation',
    rule: ISOLATION_ATTACHMENT_RULE,
    hook: isolationSync,
    base: isolationRequest('x', true)
  },
  { name: 'cell pool sync, valid spec', controller: 'cellpool', rule: CELL_POOL_CHILD_RULE, hook: cellpoolSync, base: poolRequest },
  {
    name: 'cell pool sync, invalid spec',
    controller: 'cellpool',
    rule: CELL_POOL_CHILD_RULE,
    hook: cellpoolSync,
    base: invalidPool
  },
  {
    name: 'cell pool sync, scaled down',
    controller: 'cellpool',
    rule: CELL_POOL_CHILD_RULE,
    hook: cellpoolSync,
    base: withPoolSpec((spec) => {
      spec.replicas = 0
    })
  },
  {
    name: 'cell pool sync, no join Secret',
    controller: 'cellpool',
    rule: CELL_POOL_CHILD_RULE,
    hook: cellpoolSync,
    base: { ...structuredClone(poolRequest), related: {} }
  },
  { name: 'cell pool finalize', controller: 'cellpool', rule: CELL_POOL_CHILD_RULE, hook: cellpoolFinalize, base: deletingPool },
  {
    name: 'cell pool finalize, invalid spec',
    controller: 'cellpool',
    rule: CELL_POOL_CHILD_RULE,
    hook: cellpoolFinalize,
    base: { ...deletingPool, parent: { ...deletingPool.parent, spec: { ...deletingPool.parent.spec, replicas: -1 } } }
  }
]

t.test('the requests cover what they say', async (t) => {
  t.ok(poolProblems('inference', (invalidPool.parent as { spec: unknown }).spec).length > 0, 'the invalid pool spec breaks a pool rule')
  const specValid = (req: Request): unknown =>
    ((instanceSync(req as never, NOW).status as { conditions?: Array<{ type: string; status: string }> }).conditions ?? []).find(
      (c) => c.type === 'SpecValid'
    )?.status
  t.strictSame([specValid(cases[0]!.base), specValid(cases[1]!.base), specValid(cases[2]!.base)], ['True', 'False', 'False'])
  for (const c of cases) {
    const answer = c.hook(structuredClone(c.base) as never, NOW)
    const listed = ((answer[c.rule.shape === 'composite' ? 'children' : 'attachments'] ?? []) as unknown[]).length
    // Without a Setting the decorator answers no policy (it collects its own); its labels are still checked.
    if (c.name.includes('no Setting')) t.equal(listed, 0, `${c.name}: no policy`)
    else t.ok(listed > 0, `${c.name}: answers children to check`)
  }
})

for (const c of cases) {
  t.test(
    `${c.name}: whatever the observed objects' labels, annotations and status say, the answer creates only the controller's own children`,
    async (t) => {
      fc.assert(
        fc.property(fc.array(edit, { minLength: 1, maxLength: 8 }), (edits) => {
          const req = edited(c.base, edits)
          const answer = c.hook(structuredClone(req) as never, NOW)
          const wrong = unexpected(expectedFor(c.controller, req), answer)
          if (wrong.length > 0) throw new Error(`answered ${wrong.join('; ')}`)
          const violations = answerViolations(c.rule, req, answer)
          if (violations.length > 0) throw new Error(`the service's guard refuses the answer: ${violations.join('; ')}`)
        }),
        { numRuns: 120 }
      )
      t.pass('120 edited requests answered within the rule')
    }
  )
}
