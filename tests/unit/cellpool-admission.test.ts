import t from 'tap'
import { admissionRequests } from '../support/admission.ts'
import { buildApp } from '../../hooks/server/app.ts'
import { buildRoutes, routes } from '../../hooks/server/routes.ts'
import { reviewCellPool, customize } from '../../hooks/cellpool/hooks.ts'

const kind = { group: 'cells.kubeswift.io', version: 'v1alpha1', kind: 'GPUCellPool' }

function spec(): Record<string, any> {
  return {
    replicas: 1,
    cell: {
      guestTemplate: { guestClassRef: { name: 'gpu-worker' }, imageRef: { name: 'gpu-noble' } },
      gpu: { dra: { resourceClaimTemplateName: 'single-vfio-gpu' } }
    },
    bootstrap: { joinSecretRef: { name: 'join' } },
    workloadCluster: { kubeconfigSecretRef: { name: 'kc' } }
  }
}

function pool(s: Record<string, unknown>, name = 'inference'): Record<string, unknown> {
  return { apiVersion: 'cells.kubeswift.io/v1alpha1', kind: 'GPUCellPool', metadata: { name, namespace: 'ml' }, spec: s }
}

const request = admissionRequests({ kind, namespace: 'ml', name: 'inference' })

t.test('a valid pool is admitted on create and update', async (t) => {
  t.same(reviewCellPool(request('CREATE', pool(spec()))), { problems: [], warnings: [] })
  const grown = { ...spec(), replicas: 3 }
  t.same(reviewCellPool(request('UPDATE', pool(grown), pool(spec()))), { problems: [], warnings: [] })
})

t.test('every problem of a create is refused together, each naming its field', async (t) => {
  const s = spec()
  s.cell.guestTemplate.nodeName = 'gpu-host-1'
  s.cell.guestTemplate.filesystems = [{ name: 'data' }]
  delete s.workloadCluster.kubeconfigSecretRef
  t.same(reviewCellPool(request('CREATE', pool(s))).problems, [
    'spec.workloadCluster.kubeconfigSecretRef is required',
    'spec.cell.guestTemplate.nodeName is set by the controller and must not be set here',
    'spec.cell.guestTemplate.filesystems is not supported on the GPU path: KubeSwift refuses virtiofs filesystems on the GPU path'
  ])
})

t.test('provisioner ClusterAPI is admitted with its Cluster, refused without it', async (t) => {
  const capi = spec()
  capi.cell.provisioner = 'ClusterAPI'
  capi.cell.clusterAPI = { clusterName: 'capi-cluster' }
  t.same(reviewCellPool(request('CREATE', pool(capi))), { problems: [], warnings: [] })
  delete capi.cell.clusterAPI
  t.same(reviewCellPool(request('CREATE', pool(capi))).problems, [
    'spec.cell.clusterAPI is required with provisioner ClusterAPI: it names the Cluster the cells join'
  ])
})

t.test("HAMi's DRA mode is admitted with its DeviceClass, refused without one", async (t) => {
  const dra = spec()
  dra.capacity = { hami: { mode: 'DRA' } }
  t.same(reviewCellPool(request('CREATE', pool(dra))).problems, [
    "spec.capacity.hami.deviceClassName is required with mode DRA and must be a DNS subdomain: it names the DeviceClass of HAMi's DRA driver in the workload cluster"
  ])
  dra.capacity = { hami: { mode: 'DRA', deviceClassName: 'hami-core-gpu.project-hami.io' } }
  const review = reviewCellPool(request('CREATE', pool(dra)))
  t.same(review.problems, [])
  t.same(review.warnings, [])
})

t.test('the pool name is checked', async (t) => {
  t.match(reviewCellPool(request('CREATE', pool(spec(), 'x'.repeat(58)))).problems, [/^metadata\.name x{58} must be a DNS label/])
})

t.test('fields accepted but not acted on pass with a warning', async (t) => {
  const s = spec()
  s.cell.spreadPolicy = 'Pack'
  s.cell.clusterAPI = { clusterName: 'c' }
  s.capacity = { hami: { deviceClassName: 'hami-gpu' } }
  t.same(reviewCellPool(request('CREATE', pool(s))), {
    problems: [],
    warnings: [
      'spec.cell.spreadPolicy Pack is not acted on: KubeSwift GPU launcher pods ignore topology spread constraints',
      'spec.cell.clusterAPI is not acted on: it is read only with spec.cell.provisioner ClusterAPI',
      'spec.capacity.hami.deviceClassName is not acted on: it is read only with spec.capacity.hami.mode DRA'
    ]
  })
})

t.test('an update that leaves the spec as stored is admitted even when the spec breaks a rule', async (t) => {
  const bad = spec()
  bad.cell.guestTemplate.runPolicy = 'Always'
  const stored = pool(bad)
  const relabelled = {
    ...pool(structuredClone(bad)),
    metadata: { name: 'inference', namespace: 'ml', labels: { team: 'ml' }, finalizers: [] }
  }
  t.same(reviewCellPool(request('UPDATE', relabelled, stored)), { problems: [] })
  const changed = structuredClone(bad)
  changed.replicas = 2
  t.same(reviewCellPool(request('UPDATE', pool(changed), stored)).problems, [
    'spec.cell.guestTemplate.runPolicy is set by the controller and must not be set here'
  ])
})

t.test('spec.cell.provisioner may not change while the pool has cells; it may while it has none', async (t) => {
  const capi = (): Record<string, any> => {
    const s = spec()
    s.cell.provisioner = 'ClusterAPI'
    s.cell.clusterAPI = { clusterName: 'capi' }
    return s
  }
  const withStatus = (s: Record<string, unknown>, status: Record<string, unknown>) => ({ ...pool(s), status })
  const refusal = /^spec\.cell\.provisioner: may not change from SwiftGuest to ClusterAPI while the pool has cells \(2 in its status\)/
  t.match(reviewCellPool(request('UPDATE', pool(capi()), withStatus(spec(), { replicas: 2 }))).problems, [refusal])
  t.match(
    reviewCellPool(
      request('UPDATE', pool(capi()), withStatus(spec(), { replicas: 0, cells: [{ name: 'inference-0' }, { name: 'inference-1' }] }))
    ).problems,
    [refusal],
    'a row counts as a cell (a cell being removed has no replica left)'
  )
  t.match(reviewCellPool(request('UPDATE', pool(spec()), withStatus(capi(), { replicas: 1 }))).problems, [
    /^spec\.cell\.provisioner: may not change from ClusterAPI to SwiftGuest while the pool has cells \(1 in its status\)/
  ])
  t.same(
    reviewCellPool(request('UPDATE', pool(capi()), withStatus(spec(), { replicas: 0, cells: [] }))).problems,
    [],
    'no cell: the change is admitted'
  )
  t.same(reviewCellPool(request('UPDATE', pool(capi()), pool(spec()))).problems, [], 'a pool without a status has no cell')
  const explicit = spec()
  explicit.cell.provisioner = 'SwiftGuest'
  t.same(
    reviewCellPool(request('UPDATE', pool(explicit), withStatus(spec(), { replicas: 3 }))).problems,
    [],
    'writing the default out is no change'
  )
  t.same(
    reviewCellPool(request('UPDATE', pool(capi()), withStatus(spec(), { replicas: '2', cells: 'x' }))).problems,
    [],
    'a status of another shape counts no cell'
  )
})

t.test('delete and connect pass; a missing object is refused', async (t) => {
  t.same(reviewCellPool(request('DELETE', undefined, pool(spec()))), { problems: [] })
  t.same(reviewCellPool(request('CONNECT', undefined)), { problems: [] })
  t.same(reviewCellPool(request('CREATE', null)), { problems: ['object: CREATE carries no GPUCellPool object to check'] })
  t.same(reviewCellPool(request('CREATE', { metadata: { name: 'inference' }, spec: 'nonsense' })).problems, [
    'spec must be an object, not nonsense'
  ])
})

t.test('customize relates the join Secret by name in the pool namespace', async (t) => {
  const parent = (s: Record<string, unknown>) => ({ metadata: { name: 'inference', namespace: 'ml' }, spec: s })
  t.same(
    customize({ parent: parent(spec()) }).relatedResources.filter((r) => r.resource === 'secrets'),
    [{ apiVersion: 'v1', resource: 'secrets', namespace: 'ml', names: ['join'] }]
  )
  for (const bootstrap of [
    undefined,
    'x',
    {},
    { joinSecretRef: 'join' },
    { joinSecretRef: { name: '' } },
    { joinSecretRef: { name: 7 } }
  ]) {
    t.same(
      customize({ parent: parent({ bootstrap }) }),
      { relatedResources: [] },
      `bootstrap ${JSON.stringify(bootstrap)}: nothing related`
    )
  }
})

t.test('over HTTP: /admission/cellpool answers AdmissionReviews and /hooks/cellpool/customize relates', async (t) => {
  const app = await buildApp({ routes, clock: () => new Date('2026-01-01T00:00:00Z') })
  t.teardown(() => app.close())
  const post = async (url: string, payload: unknown) => {
    const res = await app.inject({ method: 'POST', url, payload: payload as Record<string, unknown> })
    return { status: res.statusCode, body: res.json<Record<string, any>>() }
  }
  const review = (object: unknown) => ({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: request('CREATE', object) })
  const allowed = await post('/admission/cellpool', review(pool(spec())))
  t.equal(allowed.status, 200)
  t.same(allowed.body, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'u-1', allowed: true } })
  const s = spec()
  s.cell.guestTemplate.migration = { enabled: true }
  s.autoscaling = { enabled: true }
  const denied = await post('/admission/cellpool', review(pool(s)))
  t.equal(denied.status, 200)
  t.same(denied.body.response, {
    uid: 'u-1',
    allowed: false,
    status: {
      code: 422,
      reason: 'Invalid',
      message:
        'spec.cell.guestTemplate.migration is set by the controller and must not be set here; ' +
        'spec.autoscaling.maxReplicas is required when autoscaling is enabled: an unbounded pool can take every GPU of the cluster'
    }
  })
  const malformed = await post('/admission/cellpool', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' })
  t.equal(malformed.status, 400)
  const related = await post('/hooks/cellpool/customize', { controller: {}, parent: pool(spec()) })
  t.equal(related.status, 200)
  t.same(related.body.relatedResources[0], { apiVersion: 'v1', resource: 'secrets', namespace: 'ml', names: ['join'] })
  const noNamespace = await post('/hooks/cellpool/customize', { parent: { metadata: { name: 'x' }, spec: {} } })
  t.equal(noNamespace.status, 400, 'a parent without a namespace is a 400')
})

t.test('the keys an admin permits (PERMITTED_NODE_KEYS) pass admission and sync; the others are still refused', async (t) => {
  const s = spec()
  s.workloadCluster.node = {
    labels: { 'node-restriction.kubernetes.io/gpu': 'true', 'node-role.kubernetes.io/master': '' },
    taints: [{ key: 'node-role.kubernetes.io/master', effect: 'NoSchedule' }]
  }
  const object = pool(s)
  const refusals = (permitted: string[]): string[] =>
    reviewCellPool(request('CREATE', object), { permittedNodeKeys: permitted }).problems.map((p) => p.slice(0, p.indexOf(' is refused')))
  t.same(refusals([]), [
    'spec.workloadCluster.node.labels[node-restriction.kubernetes.io/gpu]: node-restriction.kubernetes.io/gpu',
    'spec.workloadCluster.node.labels[node-role.kubernetes.io/master]: node-role.kubernetes.io/master',
    'spec.workloadCluster.node.taints[0].key node-role.kubernetes.io/master'
  ])
  t.match(
    reviewCellPool(request('CREATE', object)).problems[0],
    /\(a cluster admin may permit the key: chart value controllers\.cellpool\.permittedNodeKeys\)$/,
    'a refusal says how an admin lifts it'
  )
  t.same(refusals(['node-restriction.kubernetes.io/']), [
    'spec.workloadCluster.node.labels[node-role.kubernetes.io/master]: node-role.kubernetes.io/master',
    'spec.workloadCluster.node.taints[0].key node-role.kubernetes.io/master'
  ])
  t.same(refusals(['node-restriction.kubernetes.io/', 'node-role.kubernetes.io/master']), [], 'a key permits label and taint alike')

  // The service's routes carry the context to the webhook.
  const app = await buildApp({
    routes: buildRoutes({ permittedNodeKeys: ['node-restriction.kubernetes.io/', 'node-role.kubernetes.io/master'] })
  })
  t.teardown(() => app.close())
  const res = await app.inject({
    method: 'POST',
    url: '/admission/cellpool',
    payload: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: request('CREATE', object) }
  })
  t.same(res.json().response, { uid: 'u-1', allowed: true })
  const plain = await buildApp({ routes })
  t.teardown(() => plain.close())
  const refused = await plain.inject({
    method: 'POST',
    url: '/admission/cellpool',
    payload: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: request('CREATE', object) }
  })
  t.equal(refused.json().response.allowed, false, 'a service without the context refuses them')
})
