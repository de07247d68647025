/**
 * The controllers' descriptors (hooks/metacontroller/descriptor.ts): each agrees with its
 * manifest in metacontroller/ (name, parent, shape), declares every kind its customize hook
 * relates, keeps its optional child types out of the manifest, and the service's routes are
 * exactly the descriptors' hooks.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { CONTROLLERS } from '../../hooks/controllers.ts'
import { routes } from '../../hooks/server/routes.ts'
import { NOW, baseSpec, instance as instanceObject } from './fixtures/instance.ts'
import { NS, POOL, POOL_UID, poolSpec } from './fixtures/cellpool.ts'

const ROOT = join(import.meta.dirname, '..', '..')

/** Every Metacontroller controller of metacontroller/ (the folder a user applies), by name. */
function manifests(): Map<string, Record<string, any>> {
  const dir = join(ROOT, 'metacontroller')
  const docs = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Record<string, any>))
    .filter((d) => d?.apiVersion === 'metacontroller.k8s.io/v1alpha1')
  return new Map(docs.map((d) => [d.metadata.name as string, d]))
}

t.test('each descriptor is the controller its manifest declares: name, parent, shape', async (t) => {
  const found = manifests()
  t.strictSame([...found.keys()].sort(), CONTROLLERS.map((c) => c.rule.controller).sort())
  for (const c of CONTROLLERS) {
    const m = found.get(c.rule.controller)
    const parent = m?.kind === 'CompositeController' ? m.spec.parentResource : m?.spec.resources[0]
    t.strictSame(
      { apiVersion: parent?.apiVersion, resource: parent?.resource },
      { apiVersion: c.parent.apiVersion, resource: c.parent.resource },
      c.name
    )
    t.equal(c.rule.shape, m?.kind === 'CompositeController' ? 'composite' : 'decorator', `${c.name}: shape`)
  }
})

t.test('optional child types are among the rule\u2019s and absent from the manifest', async (t) => {
  const found = manifests()
  for (const c of CONTROLLERS) {
    const declared = new Set(
      ((found.get(c.rule.controller)?.spec.childResources ?? []) as Array<{ apiVersion: string; resource: string }>).map(
        (r) => `${r.apiVersion} ${r.resource}`
      )
    )
    for (const group of c.optionalChildren) {
      t.ok(group.types.length > 0, `${c.name}.${group.option} names its types`)
      for (const type of group.types) {
        t.ok(c.rule.types.includes(type), `${c.name}: ${type.kind} is a child type of the rule`)
        t.notOk(declared.has(`${type.apiVersion} ${type.resource}`), `${c.name}: ${type.kind} is not in the manifest`)
      }
    }
  }
  t.strictSame(
    CONTROLLERS.flatMap((c) => c.optionalChildren.map((g) => `${c.name}.${g.option}: ${g.types.map((x) => x.kind).join(',')}`)),
    ['cellpool.clusterAPI: Machine']
  )
})

t.test('every kind a customize hook relates is among its descriptor\u2019s related kinds', async (t) => {
  // Parents that make each customize hook relate all it can.
  const parents: Record<string, Record<string, unknown>> = {
    instance: instanceObject(baseSpec({ sshPublicKey: { name: 'keys' }, workspace: { persistent: { size: '1Gi' } } })),
    isolation: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a', labels: { 'kubernetes.io/metadata.name': 'team-a' } } },
    cellpool: {
      apiVersion: 'cells.kubeswift.io/v1alpha1',
      kind: 'GPUCellPool',
      metadata: { name: POOL, namespace: NS, uid: POOL_UID },
      // A DRA pool whose claim comes from a template.
      spec: poolSpec()
    }
  }
  const expected: Record<string, string[]> = {
    instance: [
      'gpustack.ai/v1alpha1 settings',
      'node.k8s.io/v1 runtimeclasses',
      'storage.k8s.io/v1 storageclasses',
      'v1 namespaces',
      'v1 secrets',
      'v1 services',
      'worker.gpustack.ai/v1alpha1 instancetypes'
    ],
    isolation: ['gpustack.ai/v1alpha1 settings', 'worker.gpustack.ai/v1alpha1 instances'],
    // A pool with a claim template relates it; one with a shared claim (below), that claim.
    cellpool: ['resource.k8s.io/v1 resourceclaimtemplates', 'v1 secrets']
  }
  const related = (c: (typeof CONTROLLERS)[number], parent: unknown): string[] =>
    c.customize
      .run({ controller: {}, parent: parent as never }, NOW)
      .relatedResources.map((r) => `${r.apiVersion} ${r.resource}`)
      .sort()
  for (const c of CONTROLLERS) {
    const declared = c.related.map((r) => `${r.apiVersion} ${r.resource}`).sort()
    const got = related(c, parents[c.name])
    t.strictSame(got, expected[c.name], `${c.name} relates what its parent asks for`)
    if (c.name !== 'cellpool') t.strictSame(got, declared, `${c.name}: its descriptor declares each of them`)
    else {
      const cell = poolSpec().cell as Record<string, unknown>
      const shared = {
        ...parents.cellpool,
        spec: poolSpec({ cell: { ...cell, gpu: { backend: 'DRA', dra: { resourceClaimName: 'shared' } } } })
      }
      t.strictSame(
        [...new Set([...got, ...related(c, shared)])].sort(),
        declared,
        'cellpool: its descriptor declares what its pools relate, a template or a shared claim'
      )
    }
  }
})

t.test('the routes are the descriptors\u2019 hooks, each with its request schema', async (t) => {
  const expected = CONTROLLERS.flatMap((c) => [
    [`/hooks/${c.name}/customize`, c.customize.request],
    [`/hooks/${c.name}/sync`, c.sync.request],
    ...(c.finalize === undefined ? [] : [[`/hooks/${c.name}/finalize`, c.finalize.request]]),
    ...(c.admission === undefined ? [] : [[`/admission/${c.name}`, c.admission.request]])
  ])
  t.equal(routes.length, expected.length)
  for (const [path, schema] of expected) t.equal(routes.find((r) => r.path === path)?.schema, schema, String(path))
})
