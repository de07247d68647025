/**
 * The answer guard (hooks/metacontroller/answer-guard.ts) and the three controllers' rules: the
 * declared child types are exactly those of metacontroller/*.yaml, with the kinds their resources
 * hold; each rule admits the names its controller gives and nothing else; every other answered
 * object is a violation, named.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import {
  answerViolations,
  declaredTypeKeys,
  guardAnswer,
  UnsafeAnswerError,
  type ChildRule
} from '../../hooks/metacontroller/answer-guard.ts'
import { INSTANCE_CHILD_RULE } from '../../hooks/instance/answer-rule.ts'
import { ISOLATION_ATTACHMENT_RULE } from '../../hooks/isolation/answer-rule.ts'
import { CELL_POOL_CHILD_RULE } from '../../hooks/cellpool/request/answer-rule.ts'
import { routes } from '../../hooks/server/routes.ts'
import { RENDER_CONTROLLERS } from '../../hooks/cli/controllers.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const RULES: readonly ChildRule[] = [INSTANCE_CHILD_RULE, ISOLATION_ATTACHMENT_RULE, CELL_POOL_CHILD_RULE]

/** The controllers of metacontroller/*.yaml: name, kind, and the (apiVersion, resource) of each child type. */
function manifests(): Array<{ name: string; kind: string; children: string[] }> {
  const dir = join(ROOT, 'metacontroller')
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Record<string, any>))
    .filter((d) => d.apiVersion === 'metacontroller.k8s.io/v1alpha1')
    .map((d) => ({
      name: d.metadata.name,
      kind: d.kind,
      children: [
        ...(d.kind === 'CompositeController' ? d.spec.childResources : d.spec.attachments),
        // The Cluster API child types of metacontroller/clusterapi/cellpool.yaml (the chart's controllers.cellpool.clusterAPI).
        ...(d.metadata.name === 'gpuhooks-cellpool' ? clusterApiChildren() : [])
      ].map((c: { apiVersion: string; resource: string }) => `${c.apiVersion} ${c.resource}`)
    }))
}

/** The child types metacontroller/clusterapi/cellpool.yaml adds to metacontroller/cellpool.yaml. */
function clusterApiChildren(): Array<{ apiVersion: string; resource: string }> {
  const children = (file: string): Array<{ apiVersion: string; resource: string }> =>
    (parseAllDocuments(readFileSync(join(ROOT, 'metacontroller', file), 'utf8'))[0]?.toJS() as Record<string, any>).spec.childResources
  const base = new Set(children('cellpool.yaml').map((c) => `${c.apiVersion} ${c.resource}`))
  return children(join('clusterapi', 'cellpool.yaml')).filter((c) => !base.has(`${c.apiVersion} ${c.resource}`))
}

t.test('each rule declares exactly the child types of its manifest, and every controller has a rule', async (t) => {
  const found = manifests()
  t.strictSame(found.map((m) => m.name).sort(), RULES.map((r) => r.controller).sort())
  for (const rule of RULES) {
    const manifest = found.find((m) => m.name === rule.controller)
    t.strictSame(rule.types.map((d) => `${d.apiVersion} ${d.resource}`).sort(), manifest?.children.sort(), rule.controller)
    t.equal(rule.shape, manifest?.kind === 'CompositeController' ? 'composite' : 'decorator', `${rule.controller}: shape`)
  }
})

t.test('each declared resource holds the kind the rule names', async (t) => {
  // The CRDs this project ships and the KubeSwift stand-ins the cluster layer installs say so
  // themselves; the built-in kinds are written out.
  const crds = [
    ...readdirSync(join(ROOT, 'crds')).map((f) => join(ROOT, 'crds', f)),
    join(ROOT, 'tests', 'cluster', 'fixtures', 'kubeswift-crds.yaml')
  ].flatMap((p) => parseAllDocuments(readFileSync(p, 'utf8')).map((d) => d.toJS() as Record<string, any>))
  const kinds = new Map<string, string>([
    ['v1 pods', 'Pod'],
    ['v1 services', 'Service'],
    ['v1 secrets', 'Secret'],
    ['networking.k8s.io/v1 networkpolicies', 'NetworkPolicy'],
    ['resource.k8s.io/v1 resourceclaimtemplates', 'ResourceClaimTemplate'],
    // Cluster API's own CRD (core/config/crd/bases/cluster.x-k8s.io_machines.yaml, v1beta2 stored).
    ['cluster.x-k8s.io/v1beta2 machines', 'Machine']
  ])
  for (const crd of crds.filter((d) => d?.kind === 'CustomResourceDefinition')) {
    for (const v of crd.spec.versions) kinds.set(`${crd.spec.group}/${v.name} ${crd.spec.names.plural}`, crd.spec.names.kind)
  }
  for (const rule of RULES) {
    for (const d of rule.types)
      t.equal(d.kind, kinds.get(`${d.apiVersion} ${d.resource}`), `${rule.controller}: ${d.apiVersion} ${d.resource}`)
  }
})

t.test('every sync and finalize route names its rule; the render CLI checks the same rules', async (t) => {
  const guarded = Object.fromEntries(routes.map((r) => [r.path, r.guard?.controller ?? null]))
  t.strictSame(guarded, {
    '/hooks/instance/customize': null,
    '/hooks/instance/sync': 'gpuhooks-instance',
    '/hooks/instance/finalize': 'gpuhooks-instance',
    '/hooks/isolation/customize': null,
    '/hooks/isolation/sync': 'gpuhooks-instance-isolation',
    '/hooks/cellpool/customize': null,
    '/hooks/cellpool/sync': 'gpuhooks-cellpool',
    '/hooks/cellpool/finalize': 'gpuhooks-cellpool',
    '/admission/cellpool': null,
    '/admission/instance': null
  })
  for (const row of RENDER_CONTROLLERS) t.strictSame(row.childTypes, declaredTypeKeys(row.rule), row.name)
})

const instanceRequest = { parent: { metadata: { name: 'ws', namespace: 'team-a' } } }
const pod = (name: string, namespace?: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: namespace === undefined ? { name } : { name, namespace }
})

t.test(
  'the Instance rule: a Pod and a Service named after the Instance, its claim template <instance>-accelerator, in its namespace',
  async (t) => {
    const answer = (children: unknown[]) => answerViolations(INSTANCE_CHILD_RULE, instanceRequest, { children, status: {} })
    const template = (name: string, namespace = 'team-a') => ({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name, namespace }
    })
    const activity = (name: string, namespace = 'team-a') => ({
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      kind: 'InstanceActivity',
      metadata: { name, namespace }
    })
    t.strictSame(
      answer([
        pod('ws', 'team-a'),
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ws', namespace: 'team-a' } },
        template('ws-accelerator'),
        activity('ws')
      ]),
      []
    )
    t.strictSame(answer([activity('other'), activity('ws', 'kube-system')]), [
      'children[0] InstanceActivity.worker.gpustack.ai/v1alpha1 team-a/other: not a name gpuhooks-instance gives a InstanceActivity of ws',
      'children[1] InstanceActivity.worker.gpustack.ai/v1alpha1 kube-system/ws: not in namespace team-a'
    ])
    t.strictSame(answer([template('ws'), template('other-accelerator'), template('ws-accelerator', 'kube-system')]), [
      'children[0] ResourceClaimTemplate.resource.k8s.io/v1 team-a/ws: not a name gpuhooks-instance gives a ResourceClaimTemplate of ws',
      'children[1] ResourceClaimTemplate.resource.k8s.io/v1 team-a/other-accelerator: not a name gpuhooks-instance gives a ResourceClaimTemplate of ws',
      'children[2] ResourceClaimTemplate.resource.k8s.io/v1 kube-system/ws-accelerator: not in namespace team-a'
    ])
    t.strictSame(
      answer([{ apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim', metadata: { name: 'ws-accelerator', namespace: 'team-a' } }]),
      [
        'children[0] ResourceClaim.resource.k8s.io/v1 team-a/ws-accelerator: gpuhooks-instance declares only Pod.v1, Service.v1, ResourceClaimTemplate.resource.k8s.io/v1, InstanceActivity.worker.gpustack.ai/v1alpha1'
      ]
    )
    t.strictSame(
      answer([
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'tenant-admin' } },
        pod('ws', 'kube-system'),
        pod('ws'),
        pod('other', 'team-a'),
        { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'ws', namespace: 'team-a' } },
        { kind: 'Pod', metadata: { name: 'ws', namespace: 'team-a' } },
        'not an object'
      ]),
      [
        'children[0] ClusterRoleBinding.rbac.authorization.k8s.io/v1 tenant-admin: gpuhooks-instance declares only Pod.v1, Service.v1, ResourceClaimTemplate.resource.k8s.io/v1, InstanceActivity.worker.gpustack.ai/v1alpha1',
        'children[1] Pod.v1 kube-system/ws: not in namespace team-a',
        'children[2] Pod.v1 ws: not in namespace team-a',
        'children[3] Pod.v1 team-a/other: not a name gpuhooks-instance gives a Pod of ws',
        'children[4] Secret.v1 team-a/ws: gpuhooks-instance declares only Pod.v1, Service.v1, ResourceClaimTemplate.resource.k8s.io/v1, InstanceActivity.worker.gpustack.ai/v1alpha1',
        'children[5] lacks a string apiVersion, kind or metadata.name',
        'children[6] lacks a string apiVersion, kind or metadata.name'
      ]
    )
    t.strictSame(answerViolations(INSTANCE_CHILD_RULE, instanceRequest, { status: {} }), ['the answer has no children list'])
  }
)

t.test('the isolation rule: the policy gpustack-instance-isolation in the decorated Namespace; one label, one annotation', async (t) => {
  const request = { object: { metadata: { name: 'team-a' } } }
  const policy = (name: string, namespace: string) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace }
  })
  const ok = {
    attachments: [policy('gpustack-instance-isolation', 'team-a')],
    labels: { 'gpustack.ai/holds-instances': 'true' },
    annotations: { 'gpustack.ai/instance-isolation': null },
    status: null
  }
  t.strictSame(answerViolations(ISOLATION_ATTACHMENT_RULE, request, ok), [])
  t.strictSame(
    answerViolations(ISOLATION_ATTACHMENT_RULE, request, {
      attachments: [policy('allow-all', 'team-a'), policy('gpustack-instance-isolation', 'team-b')],
      labels: { 'pod-security.kubernetes.io/enforce': 'privileged' },
      annotations: { 'scheduler.alpha.kubernetes.io/node-selector': 'x' },
      status: null
    }),
    [
      'attachments[0] NetworkPolicy.networking.k8s.io/v1 team-a/allow-all: not a name gpuhooks-instance-isolation gives a NetworkPolicy of team-a',
      'attachments[1] NetworkPolicy.networking.k8s.io/v1 team-b/gpustack-instance-isolation: not in namespace team-a',
      'labels pod-security.kubernetes.io/enforce: gpuhooks-instance-isolation sets only gpustack.ai/holds-instances on the decorated object',
      'annotations scheduler.alpha.kubernetes.io/node-selector: gpuhooks-instance-isolation sets only gpustack.ai/instance-isolation on the decorated object'
    ]
  )
})

t.test('the cell pool rule: per cell <pool>-<i>-bootstrap, <pool>-<i>-seed and <pool>-<i>; per pool <pool>', async (t) => {
  const scope = { parentName: 'gpu', namespace: 'ml' }
  const cases: Array<[string, string, boolean]> = [
    ['Secret.v1', 'gpu-0-bootstrap', true],
    ['Secret.v1', 'gpu-12-bootstrap', true],
    ['Secret.v1', 'gpu-01-bootstrap', false],
    ['Secret.v1', 'gpu-0', false],
    ['Secret.v1', 'gpu-x-bootstrap', false],
    ['Secret.v1', 'gpu-0-bootstrap-bootstrap', false],
    ['Secret.v1', 'join', false],
    ['Secret.v1', 'gpu-123456-bootstrap', false],
    ['SwiftSeedProfile.seed.kubeswift.io/v1alpha1', 'gpu-3-seed', true],
    ['SwiftSeedProfile.seed.kubeswift.io/v1alpha1', 'gpu-3-bootstrap', false],
    ['SwiftGuest.swift.kubeswift.io/v1alpha1', 'gpu-3', true],
    ['SwiftGuest.swift.kubeswift.io/v1alpha1', 'gpu-3-seed', false],
    ['SwiftGuest.swift.kubeswift.io/v1alpha1', 'gpu', false],
    ['SwiftGuest.swift.kubeswift.io/v1alpha1', 'gpux-3', false],
    ['CellNodeSet.cells.kubeswift.io/v1alpha1', 'gpu', true],
    ['CellNodeSet.cells.kubeswift.io/v1alpha1', 'gpu-0', false],
    ['Pod.v1', 'gpu', false]
  ]
  for (const [type, name, expected] of cases) t.equal(CELL_POOL_CHILD_RULE.isChildName(scope, type, name), expected, `${type} ${name}`)
})

t.test('guardAnswer passes an obeying answer through and throws UnsafeAnswerError, a 500, for any other', async (t) => {
  const answer = { children: [pod('ws', 'team-a')], status: {} }
  t.equal(guardAnswer('instance_sync', INSTANCE_CHILD_RULE, instanceRequest, answer), answer)
  const bad = { children: [pod('ws', 'kube-system')], status: {} }
  t.throws(() => guardAnswer('instance_sync', INSTANCE_CHILD_RULE, instanceRequest, bad), {
    name: 'UnsafeAnswerError',
    statusCode: 500,
    violations: ['children[0] Pod.v1 kube-system/ws: not in namespace team-a']
  })
  const many = new UnsafeAnswerError(
    'instance_sync',
    Array.from({ length: 30 }, (_, i) => `v${i}`)
  )
  t.match(many.message, /v9; and 20 more$/, 'a long list is cut in the message; the error keeps all of it')
  t.equal(many.violations.length, 30)
})
