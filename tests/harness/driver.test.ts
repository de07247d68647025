// The cluster layer's Metacontroller stand-in (tests/cluster/support/driver.ts) and its REST
// client helpers, checked without a cluster: manifests read from text, wire formats decoded
// strictly, and whole syncs run against an in-memory API server built on the unit layer's
// defaulting fixture, with the hooks faked behind the HTTP transport.
import t from 'tap'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { lastApplied, type Json, type JsonObject } from '../support/merge.ts'
import { FakeKube } from '../support/fake-kube.ts'
import { Driver } from '../cluster/support/driver.ts'
import { goDuration, loadControllers, parseControllers, type ControllerSpec } from '../cluster/support/driver-manifest.ts'
import {
  decodeCompositeResponse,
  decodeCustomizeResponse,
  decodeDecoratorResponse,
  HookError,
  type HookTransport
} from '../cluster/support/driver-protocol.ts'
import { loadKubeconfig, resourcePath, selectorMatches, selectorString, type ResourceRef } from '../cluster/support/kube.ts'

const DECORATOR_YAML = `
apiVersion: metacontroller.k8s.io/v1alpha1
kind: DecoratorController
metadata: {name: iso}
spec:
  resources:
  - apiVersion: v1
    resource: namespaces
    annotationSelector: {matchAnnotations: {a: b}}
  attachments:
  - {apiVersion: networking.k8s.io/v1, resource: networkpolicies, updateStrategy: {method: InPlace}}
  hooks:
    sync: {version: v2, webhook: {url: "http://svc.ns:80/hooks/isolation/sync?x=1", timeout: 1m30s}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-controller}
`

t.test('manifests', async (t) => {
  t.test("the project's Instance controller reads as written", async (t) => {
    const cc = loadControllers().find((c) => c.name === 'gpuhooks-instance')
    t.has(cc, {
      kind: 'CompositeController',
      parent: { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances' },
      children: [
        { apiVersion: 'v1', resource: 'pods', method: 'OnDelete' },
        { apiVersion: 'v1', resource: 'services', method: 'InPlace' }
      ],
      generateSelector: true,
      hooks: {
        sync: { path: '/hooks/instance/sync', version: 'v2', timeoutMs: 10000 },
        finalize: { path: '/hooks/instance/finalize' },
        customize: { path: '/hooks/instance/customize' }
      }
    })
  })
  t.test('a decorator with an annotation selector and a hook URL reads as Metacontroller reads it', async (t) => {
    const specs = parseControllers(DECORATOR_YAML)
    t.equal(specs.length, 1, 'other kinds are skipped')
    t.has(specs[0], {
      kind: 'DecoratorController',
      resources: [{ apiVersion: 'v1', resource: 'namespaces', annotationSelector: { matchLabels: { a: 'b' } } }],
      attachments: [{ resource: 'networkpolicies', method: 'InPlace' }],
      hooks: { sync: { path: '/hooks/isolation/sync?x=1', timeoutMs: 90000 } }
    })
  })
  t.test('an update strategy left out is OnDelete', async (t) => {
    const [cc] = parseControllers(
      'apiVersion: metacontroller.k8s.io/v1alpha1\nkind: CompositeController\nmetadata: {name: x}\nspec: {parentResource: {apiVersion: a/v1, resource: xs}, childResources: [{apiVersion: v1, resource: pods}]}'
    )
    t.same(cc?.kind === 'CompositeController' && cc.children, [{ apiVersion: 'v1', resource: 'pods', method: 'OnDelete' }])
  })
  t.test('Go durations', async (t) => {
    t.same(
      ['10s', '1m30s', '500ms', '1h', 'x', undefined].map((d) => goDuration(d)),
      [10000, 90000, 500, 3600000, undefined, undefined]
    )
  })
})

t.test('hook answers decode strictly, as hook v2 does', async (t) => {
  const rows: { name: string; given: () => unknown; expected: RegExp | JsonObject }[] = [
    {
      name: 'an unknown top-level field fails',
      given: () => decodeCompositeResponse({ children: [], status: {}, extra: 1 }),
      expected: /unknown field\(s\) "extra"/
    },
    {
      name: 'children must be objects with a kind',
      given: () => decodeCompositeResponse({ children: [{ metadata: {} }] }),
      expected: /response.children/
    },
    {
      name: 'omitted children and status decode as none',
      given: () => decodeCompositeResponse({}),
      expected: { children: [], status: null, resyncAfterSeconds: 0, finalized: false }
    },
    {
      name: 'decorator labels may hold null',
      given: () => decodeDecoratorResponse({ labels: { a: null, b: 'x' }, status: null }),
      expected: { labels: { a: null, b: 'x' }, status: null }
    },
    {
      name: 'decorator labels may not hold numbers',
      given: () => decodeDecoratorResponse({ labels: { a: 1 } }),
      expected: /response.labels/
    },
    {
      name: 'a related rule with an unknown field fails',
      given: () => decodeCustomizeResponse({ relatedResources: [{ apiVersion: 'v1', resource: 'x', nmae: ['a'] }] }),
      expected: /unknown field\(s\) "nmae"/
    },
    {
      name: 'a label selector with an unknown field fails',
      given: () => decodeCustomizeResponse({ relatedResources: [{ apiVersion: 'v1', resource: 'x', labelSelector: { matchLabel: {} } }] }),
      expected: /labelSelector: unknown/
    }
  ]
  for (const row of rows) {
    t.test(row.name, async (t) => {
      if (row.expected instanceof RegExp) t.throws(row.given, row.expected)
      else t.has(row.given(), row.expected)
    })
  }
})

t.test('label selectors', async (t) => {
  const labels = { app: 'x', tier: 'gpu' }
  const rows: { name: string; given: Parameters<typeof selectorMatches>[0]; expected: boolean; query: string }[] = [
    { name: 'null selects everything', given: null, expected: true, query: '' },
    { name: 'matchLabels must all match', given: { matchLabels: { app: 'x', tier: 'cpu' } }, expected: false, query: 'app=x,tier=cpu' },
    {
      name: 'In',
      given: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['gpu', 'cpu'] }] },
      expected: true,
      query: 'tier in (gpu,cpu)'
    },
    {
      name: 'NotIn passes when the label is missing',
      given: { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] },
      expected: true,
      query: 'zone notin (a)'
    },
    { name: 'Exists', given: { matchExpressions: [{ key: 'app', operator: 'Exists' }] }, expected: true, query: 'app' },
    { name: 'DoesNotExist', given: { matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, expected: false, query: '!app' }
  ]
  for (const row of rows) {
    t.test(row.name, async (t) => {
      t.equal(selectorMatches(row.given, labels), row.expected)
      t.equal(selectorString(row.given), row.query)
    })
  }
  t.test('In without values is invalid', async (t) =>
    t.throws(() => selectorMatches({ matchExpressions: [{ key: 'a', operator: 'In' }] }, {}), /invalid label selector/)
  )
})

t.test('REST paths', async (t) => {
  const rows: { name: string; given: [ResourceRef, string?]; expected: string }[] = [
    {
      name: 'a core namespaced object',
      given: [{ apiVersion: 'v1', resource: 'pods', namespace: 'ns', name: 'p' }],
      expected: '/api/v1/namespaces/ns/pods/p'
    },
    {
      name: 'a group collection across namespaces',
      given: [{ apiVersion: 'networking.k8s.io/v1', resource: 'networkpolicies' }],
      expected: '/apis/networking.k8s.io/v1/networkpolicies'
    },
    {
      name: 'a status subresource',
      given: [{ apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace: 'a', name: 'i' }, 'status'],
      expected: '/apis/worker.gpustack.ai/v1alpha1/namespaces/a/instances/i/status'
    }
  ]
  for (const row of rows) t.test(row.name, async (t) => t.equal(resourcePath(...row.given), row.expected))
})

t.test('kubeconfig: files relative to it, or inline data', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'))
  writeFileSync(join(dir, 'ca.crt'), 'CA')
  writeFileSync(
    join(dir, 'config'),
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: admin',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt}}]',
      `users: [{name: u, user: {client-certificate-data: ${Buffer.from('CERT').toString('base64')}, client-key-data: ${Buffer.from('KEY').toString('base64')}}}]`,
      'contexts: [{name: admin, context: {cluster: c, user: u}}]'
    ].join('\n')
  )
  const conn = loadKubeconfig(join(dir, 'config'))
  t.equal(conn.server, 'https://127.0.0.1:6443')
  t.same([conn.ca?.toString(), conn.cert?.toString(), conn.key?.toString()], ['CA', 'CERT', 'KEY'])
})

type Handler = (body: JsonObject) => JsonObject | { status: number; body: string }
function transport(handlers: Record<string, Handler>, calls: { path: string; body: JsonObject }[]): HookTransport {
  return async (url, body) => {
    const path = new URL(url).pathname
    calls.push({ path, body })
    const answer = (handlers[path] ?? (() => ({ status: 404, body: 'no such hook' })))(body)
    return 'status' in answer && typeof answer.status === 'number' && typeof answer.body === 'string'
      ? (answer as { status: number; body: string })
      : { status: 200, body: JSON.stringify(answer) }
  }
}

const instanceController = loadControllers().find((c) => c.name === 'gpuhooks-instance') as ControllerSpec
const instance = {
  apiVersion: 'worker.gpustack.ai/v1alpha1',
  kind: 'Instance',
  metadata: { name: 'i', namespace: 'team' },
  spec: { image: 'x' }
}
const ref = { name: 'i', namespace: 'team' }
const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'i' }, spec: { type: 'NodePort', ports: [{ name: 'ssh', port: 22 }] } }
const observedPort = (req: JsonObject): Json | undefined =>
  (
    (((req.children as JsonObject)['Service.v1'] as JsonObject | undefined)?.['team/i'] as JsonObject | undefined)?.spec as
      JsonObject | undefined
  )?.ports

async function setup(handlers: Record<string, Handler>) {
  const kube = new FakeKube()
  await kube.create({ apiVersion: 'v1', resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } })
  await kube.create({ apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace: 'team' }, instance)
  const calls: { path: string; body: JsonObject }[] = []
  const driver = new Driver({
    kube,
    controller: instanceController,
    hookBaseUrl: 'http://hooks.test',
    transport: transport(handlers, calls)
  })
  return { kube, calls, driver }
}

const hooks: Record<string, Handler> = {
  '/hooks/instance/customize': () => ({ relatedResources: [{ apiVersion: 'v1', resource: 'namespaces', names: ['team'] }] }),
  '/hooks/instance/sync': (req) => ({ children: [svc], status: { ports: observedPort(req) ?? null } }),
  '/hooks/instance/finalize': (req) => ({
    children: [],
    finalized: Object.keys((req.children as JsonObject)['Service.v1'] as JsonObject).length === 0
  })
}

t.test('a composite sync', async (t) => {
  t.test('the first pass adds the finalizer, sends the v2 request, creates the child and writes status', async (t) => {
    const { kube, calls, driver } = await setup(hooks)
    const report = await driver.syncOnce(ref)
    t.same(
      report.writes.map((w) => `${w.verb} ${w.target}`),
      ['finalizer instances team/i', 'create Service.v1 team/i', 'status instances team/i']
    )
    const sync = calls.find((c) => c.path === '/hooks/instance/sync')?.body as JsonObject
    t.same(Object.keys(sync).sort(), ['children', 'controller', 'finalizing', 'parent', 'related'])
    t.same(
      sync.children,
      {
        'Pod.v1': {},
        'Service.v1': {},
        'ResourceClaimTemplate.resource.k8s.io/v1': {},
        'PersistentVolumeClaim.v1': {},
        'InstanceActivity.worker.gpustack.ai/v1alpha1': {}
      },
      'every declared type is present'
    )
    t.same(Object.keys((sync.related as JsonObject)['Namespace.v1'] as JsonObject), ['team'], 'cluster-scoped objects are keyed by name')
    t.same(((sync.parent as JsonObject).metadata as JsonObject).finalizers, ['metacontroller.io/compositecontroller-gpuhooks-instance'])
    const child = (await kube.get({ apiVersion: 'v1', resource: 'services', namespace: 'team', name: 'i' })).body
    const parent = (await kube.get({ apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace: 'team', name: 'i' })).body
    t.same(lastApplied(child), {
      ...svc,
      metadata: { name: 'i', namespace: 'team', labels: { 'controller-uid': (parent.metadata as JsonObject).uid } }
    })
    t.has(child, {
      metadata: {
        ownerReferences: [
          { kind: 'Instance', name: 'i', uid: (parent.metadata as JsonObject).uid, controller: true, blockOwnerDeletion: true }
        ]
      }
    })
    t.same(parent.status, { ports: null, observedGeneration: 1 })
  })
  t.test('a status that reports the created child needs a third pass to settle', async (t) => {
    const { driver } = await setup(hooks)
    await t.rejects(
      driver.settle(ref),
      /not settled after 2 passes; the last one wrote:\n {2}status instances team\/i\n {6}ports: null -> \[/
    )
    const { driver: again } = await setup(hooks)
    const settled = await again.settle(ref, { maxPasses: 3 })
    t.equal(settled.passes.length, 3)
    t.same(settled.last.writes, [])
  })
  t.test('customize is asked once per parent generation', async (t) => {
    const { calls, driver } = await setup(hooks)
    await driver.settle(ref, { maxPasses: 3 })
    t.equal(calls.filter((c) => c.path === '/hooks/instance/customize').length, 1)
  })
  t.test('a status field the schema prunes is reported with its path', async (t) => {
    const { kube, driver } = await setup(hooks)
    kube.keepStatus = ['observedGeneration']
    await t.rejects(driver.settle(ref), /status read back differs from status written .*\n {2}ports: null -> \(absent\)/)
  })
  t.test('a hook answering 500 fails the sync with its body', async (t) => {
    const { driver } = await setup({ ...hooks, '/hooks/instance/sync': () => ({ status: 500, body: '{"error":"boom"}' }) })
    await t.rejects(driver.syncOnce(ref), new HookError('http://hooks.test/hooks/instance/sync', 500, '{"error":"boom"}'))
  })
  t.test('an answer with an unknown field fails the sync before anything is applied', async (t) => {
    const { kube, driver } = await setup({ ...hooks, '/hooks/instance/sync': () => ({ children: [svc], status: {}, resync: 1 }) })
    await t.rejects(driver.syncOnce(ref), { name: 'SyncError', message: /unknown field\(s\) "resync"/ })
    await t.rejects(kube.get({ apiVersion: 'v1', resource: 'services', namespace: 'team', name: 'i' }), /NotFound/)
  })
  t.test('a same-named Service the controller does not own is left alone', async (t) => {
    const { kube, driver } = await setup(hooks)
    await kube.create(
      { apiVersion: 'v1', resource: 'services', namespace: 'team' },
      { ...svc, metadata: { name: 'i', namespace: 'team' }, spec: { ports: [{ port: 1 }] } }
    )
    const report = await driver.syncOnce(ref)
    t.same(report.skipped, ['create Service.v1 team/i: AlreadyExists'])
    t.same(((await kube.get({ apiVersion: 'v1', resource: 'services', namespace: 'team', name: 'i' })).body.spec as JsonObject).ports, [
      { port: 1, protocol: 'TCP', targetPort: 1 }
    ])
  })
  t.test('deleting the parent calls finalize, deletes the children, wipes the unanswered status, then drops the finalizer', async (t) => {
    const { kube, calls, driver } = await setup(hooks)
    await driver.settle(ref, { maxPasses: 3 })
    const iref = { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace: 'team', name: 'i' }
    await kube.delete(iref)
    const first = await driver.syncOnce(ref)
    t.equal(first.finalizing, true)
    t.same(
      first.writes.map((w) => w.verb),
      ['delete', 'status']
    )
    t.same(first.status?.expected, { observedGeneration: 1 }, 'an answer without status leaves only observedGeneration')
    await kube.delete({ apiVersion: 'v1', resource: 'services', namespace: 'team', name: 'i' }).catch(() => undefined)
    const second = await driver.syncOnce(ref)
    t.same(
      second.writes.map((w) => w.verb),
      ['finalizer']
    )
    t.equal((calls.at(-1)?.body as JsonObject).finalizing, true)
    t.same((await driver.syncOnce(ref)).parentGone, true)
  })
})

t.test('a decorator sync', async (t) => {
  const [dc] = parseControllers(DECORATOR_YAML.replace('annotationSelector: {matchAnnotations: {a: b}}', ''))
  const policy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'iso', namespace: 'team' },
    spec: { podSelector: {}, policyTypes: ['Ingress'] }
  }
  t.test('annotations are set and removed on the object, status null leaves it, attachments carry the decorator annotation', async (t) => {
    const kube = new FakeKube()
    await kube.create(
      { apiVersion: 'v1', resource: 'namespaces' },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team', annotations: { old: 'x' } } }
    )
    const calls: { path: string; body: JsonObject }[] = []
    const sync: Handler = () => ({ attachments: [policy], annotations: { note: 'ok', old: null }, status: null })
    const driver = new Driver({
      kube,
      controller: dc as ControllerSpec,
      hookBaseUrl: 'http://hooks.test',
      transport: transport({ '/hooks/isolation/sync': sync }, calls)
    })
    const settled = await driver.settle({ name: 'team' })
    t.same(
      settled.passes[0]?.writes.map((w) => w.verb),
      ['parent', 'create']
    )
    t.same(Object.keys(calls[0]?.body ?? {}).sort(), ['attachments', 'controller', 'finalizing', 'object', 'related'])
    const ns = (await kube.get({ apiVersion: 'v1', resource: 'namespaces', name: 'team' })).body
    t.same((ns.metadata as JsonObject).annotations, { note: 'ok' })
    const attached = (await kube.get({ apiVersion: 'networking.k8s.io/v1', resource: 'networkpolicies', namespace: 'team', name: 'iso' }))
      .body
    t.equal(((attached.metadata as JsonObject).annotations as JsonObject)['metacontroller.k8s.io/decorator-controller'], 'iso')
    t.same(Object.keys(((calls[1]?.body as JsonObject).attachments as JsonObject)['NetworkPolicy.networking.k8s.io/v1'] as JsonObject), [
      'team/iso'
    ])
  })
})
