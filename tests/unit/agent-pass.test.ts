// One pass of the agent against fake clusters: what it reads (field selectors, never all Pods),
// what it writes, and that it writes nothing in an unreachable workload cluster.
import t from 'tap'
import type { InfraApi, WorkloadApi } from '../../hooks/agent/model/apis.ts'
import { HeartbeatTracker } from '../../hooks/agent/nodeset/decide/liveness.ts'
import { runPass, type PassDeps } from '../../hooks/agent/nodeset/pass.ts'
import { listPendingPods, readSnapshot, UNBOUND_PENDING } from '../../hooks/agent/nodeset/snapshot.ts'

const POOL_UID = 'uid-pool'
const NOW = Date.parse('2026-11-30T12:00:00Z')

class FakeWorkload implements WorkloadApi {
  calls: string[] = []
  nodes = new Map<string, Record<string, any>>()
  leases = new Map<string, string>()
  pods: Record<string, any>[] = []
  down: Error | undefined
  async listNodes(labelSelector: string): Promise<unknown[]> {
    this.calls.push(`listNodes ${labelSelector}`)
    if (this.down) throw this.down
    const [key, value] = labelSelector.split('=') as [string, string]
    return [...this.nodes.values()].filter((n) => n.metadata.labels?.[key] === value).map((n) => structuredClone(n))
  }
  async getNode(name: string): Promise<unknown> {
    this.calls.push(`getNode ${name}`)
    if (this.down) throw this.down
    return structuredClone(this.nodes.get(name))
  }
  async getNodeLease(node: string): Promise<unknown> {
    this.calls.push(`getNodeLease ${node}`)
    const renewTime = this.leases.get(node)
    return renewTime === undefined ? undefined : { metadata: { name: node }, spec: { renewTime } }
  }
  async listPods(fieldSelector: string): Promise<unknown[]> {
    this.calls.push(`listPods ${fieldSelector}`)
    const node = fieldSelector.replace('spec.nodeName=', '')
    return this.pods.filter((p) => p.spec.nodeName === node)
  }
  /** Pages of the pending Pods; the continue token is the index of the next Pod. */
  async listPodPage(fieldSelector: string, limit: number, continueToken?: string): Promise<{ items: unknown[]; continue?: string }> {
    this.calls.push(`listPodPage ${fieldSelector} limit=${limit}${continueToken === undefined ? '' : ` continue=${continueToken}`}`)
    if (fieldSelector !== UNBOUND_PENDING) throw new Error(`unexpected ${fieldSelector}`)
    const pending = this.pods.filter((p) => !p.spec.nodeName && p.status.phase === 'Pending')
    const from = Number(continueToken ?? 0)
    const next = from + limit
    return next < pending.length ? { items: pending.slice(from, next), continue: String(next) } : { items: pending.slice(from) }
  }
  /** HAMi's DRA mode: the slices by Node, the claims in one page, the DeviceClasses by name. */
  slices: Record<string, any>[] = []
  claims: Record<string, any>[] = []
  classes = new Set<string>()
  async listResourceSlices(fieldSelector: string): Promise<unknown[]> {
    this.calls.push(`listResourceSlices ${fieldSelector}`)
    const node = /spec\.nodeName=([^,]*)/.exec(fieldSelector)?.[1]
    return this.slices.filter((s) => s.spec.nodeName === node).map((s) => structuredClone(s))
  }
  async listResourceClaimPage(limit: number, continueToken?: string): Promise<{ items: unknown[]; continue?: string }> {
    this.calls.push(`listResourceClaimPage limit=${limit}${continueToken === undefined ? '' : ` continue=${continueToken}`}`)
    return { items: this.claims.map((c) => structuredClone(c)) }
  }
  async getDeviceClass(name: string): Promise<unknown> {
    this.calls.push(`getDeviceClass ${name}`)
    return this.classes.has(name) ? { metadata: { name } } : undefined
  }
  async patchNode(name: string, patch: unknown): Promise<void> {
    this.calls.push(`patchNode ${name} ${JSON.stringify(patch)}`)
  }
  async deleteNode(name: string, preconditions: { uid: string; resourceVersion: string }): Promise<void> {
    this.calls.push(`deleteNode ${name} ${preconditions.uid} ${preconditions.resourceVersion}`)
    this.nodes.delete(name)
  }
  writes(): string[] {
    return this.calls.filter((c) => c.startsWith('patchNode') || c.startsWith('deleteNode'))
  }
}

class FakeInfra implements InfraApi {
  calls: string[] = []
  async getSecret(namespace: string, name: string): Promise<unknown> {
    return namespace === 'ns' && name === 'wl' ? structuredClone(SECRET) : undefined
  }
  statuses: unknown[] = []
  pool: unknown = { metadata: { name: 'pool', uid: POOL_UID } }
  async getPool(): Promise<unknown> {
    return this.pool
  }
  async replaceStatus(namespace: string, name: string, resourceVersion: string, status: unknown): Promise<string | undefined> {
    this.calls.push(`status ${namespace}/${name}@${resourceVersion}`)
    this.statuses.push(structuredClone(status))
    return 'next'
  }
  async setFinalizers(_ns: string, _name: string, expected: string[], next: string[]): Promise<void> {
    this.calls.push(`finalizers ${JSON.stringify(expected)} -> ${JSON.stringify(next)}`)
  }
  async warn(_cns: unknown, reason: string, message: string): Promise<void> {
    this.calls.push(`event ${reason}: ${message}`)
  }
  async poolEvent(_pool: unknown, type: string, reason: string): Promise<string> {
    this.calls.push(`pool event ${type} ${reason}`)
    return 'e'
  }
  async recountEvent(_namespace: string, name: string, count: number): Promise<void> {
    this.calls.push(`recount ${name} ${count}`)
  }
}

const KUBECONFIG =
  'apiVersion: v1\nclusters: [{name: w, cluster: {server: "https://10.0.0.1"}}]\nusers: [{name: a, user: {token: t}}]\ncontexts: [{name: w, context: {cluster: w, user: a}}]\ncurrent-context: w\n'
const SECRET = {
  metadata: { name: 'wl', namespace: 'ns', resourceVersion: '5', labels: { 'cells.kubeswift.io/workload-kubeconfig': 'true' } },
  data: { value: Buffer.from(KUBECONFIG).toString('base64') }
}

function cellNodeSet(nodes: unknown[], more: Record<string, any> = {}): Record<string, any> {
  return {
    apiVersion: 'cells.kubeswift.io/v1alpha1',
    kind: 'CellNodeSet',
    metadata: {
      name: 'pool',
      namespace: 'ns',
      uid: 'cns-uid',
      generation: 4,
      resourceVersion: '77',
      finalizers: ['cells.kubeswift.io/workload-nodes'],
      ownerReferences: [{ apiVersion: 'cells.kubeswift.io/v1alpha1', kind: 'GPUCellPool', name: 'pool', uid: POOL_UID, controller: true }],
      ...more
    },
    spec: { kubeconfigSecretRef: { name: 'wl', key: 'value' }, poolUID: POOL_UID, nodes }
  }
}
const node = (name: string, instance: string): Record<string, any> => ({
  metadata: {
    name,
    uid: `u-${name}`,
    resourceVersion: '9',
    labels: { 'cells.kubeswift.io/pool-uid': POOL_UID, 'cells.kubeswift.io/instance': instance }
  },
  spec: {},
  status: { conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2001-01-01T00:00:00Z' }] }
})

/** One snapshot at `now`, the pending Pods listed with the same client. */
const observe = (workload: WorkloadApi, spec: Parameters<typeof readSnapshot>[1], tracker: HeartbeatTracker, now: number) =>
  readSnapshot(
    workload,
    spec,
    tracker,
    () => now,
    () => listPendingPods(workload, 5000)
  )

function deps(workload: FakeWorkload, infra: FakeInfra, clock: { now: number }, tracker = new HeartbeatTracker()): PassDeps {
  return {
    infra,
    secret: (namespace, name) => infra.getSecret(namespace, name),
    workload: () => workload,
    pendingPods: (api) => listPendingPods(api, 5000),
    tracker: () => tracker,
    clock: () => new Date(clock.now)
  }
}

t.test('Pods are read by field selector per Node and pending-unbound, never all at once', async (t) => {
  const workload = new FakeWorkload()
  workload.nodes.set('pool-0', node('pool-0', 'g0'))
  workload.leases.set('pool-0', 'r1')
  await observe(workload, { poolUID: POOL_UID, nodes: [{ name: 'pool-0' }, { name: 'pool-1' }] }, new HeartbeatTracker(), NOW)
  t.same(workload.calls, [
    `listNodes cells.kubeswift.io/pool-uid=${POOL_UID}`,
    'getNode pool-1',
    'getNodeLease pool-0',
    'listPods spec.nodeName=pool-0',
    'listPodPage spec.nodeName=,status.phase=Pending limit=500'
  ])
})

t.test('a stale Node is deleted, then the status is observed after the deletion', async (t) => {
  const workload = new FakeWorkload()
  const infra = new FakeInfra()
  const clock = { now: NOW }
  const tracker = new HeartbeatTracker()
  workload.nodes.set('pool-0', node('pool-0', 'old-guest'))
  workload.leases.set('pool-0', 'r1')
  const object = cellNodeSet([{ name: 'pool-0', instance: 'new-guest' }])
  const d = deps(workload, infra, clock, tracker)
  // The kubelet stopped before the agent started: the first 90 s delete nothing.
  for (let s = 0; s < 90; s += 15) {
    clock.now = NOW + s * 1000
    await runPass(object, d)
    t.same(workload.writes(), [], `nothing deleted at ${s} s`)
  }
  clock.now = NOW + 90_000
  const report = await runPass(object, d)
  t.same(workload.writes(), ['deleteNode pool-0 u-pool-0 9'])
  t.same(report.nodeWrites, { patch: 0, delete: 1 })
  const status = infra.statuses.at(-1) as Record<string, any>
  t.same(status.nodes, [{ name: 'pool-0', present: false }], 'observed after the deletion')
  t.same(status.swept, [{ name: 'pool-0', instance: 'old-guest', reason: 'Stale', time: '2026-11-30T12:01:30Z' }])
  t.equal(status.observedGeneration, 4)
  t.equal(infra.calls.at(-1), 'status ns/pool@77')
})

t.test('an unreachable workload cluster: Reachable=False, no Node write, no finalizer added', async (t) => {
  const workload = new FakeWorkload()
  const infra = new FakeInfra()
  workload.down = Object.assign(new Error('Forbidden'), { code: 403 })
  const report = await runPass(cellNodeSet([], { finalizers: [] }), deps(workload, infra, { now: NOW }))
  t.equal(report.reachable, 'Forbidden')
  t.same(workload.writes(), [])
  t.same(
    infra.calls.filter((c) => c.startsWith('finalizers')),
    []
  )
  t.match((infra.statuses[0] as Record<string, any>).conditions, [{ type: 'Reachable', status: 'False', reason: 'Forbidden' }])
})

t.test('a refused kubeconfig is CredentialInvalid and nothing is read in the workload cluster', async (t) => {
  const workload = new FakeWorkload()
  const infra = new FakeInfra()
  const d = deps(workload, infra, { now: NOW })
  const bad = { ...SECRET, data: { value: Buffer.from(KUBECONFIG.replace('{token: t}', '{exec: {command: sh}}')).toString('base64') } }
  d.secret = async () => bad
  const report = await runPass(cellNodeSet([]), d)
  t.equal(report.reachable, 'CredentialInvalid')
  t.same(workload.calls, [])
  t.match((infra.statuses[0] as Record<string, any>).conditions[0].message, /users\[0\]\.user\.exec is refused/)
})

t.test('the Secret is read by name: a missing one, one the agent may not read, and a failed read', async (t) => {
  const workload = new FakeWorkload()
  const infra = new FakeInfra()
  const d = deps(workload, infra, { now: NOW })
  const asked: string[] = []
  d.secret = async (namespace, name) => {
    asked.push(`${namespace}/${name}`)
    return undefined
  }
  const missing = await runPass(cellNodeSet([]), d)
  t.same(asked, ['ns/wl'], 'the one Secret the CellNodeSet names')
  t.equal(missing.reachable, 'CredentialInvalid')
  t.match((infra.statuses[0] as Record<string, any>).conditions[0].message, 'Secret ns/wl does not exist')

  d.secret = async () => {
    throw Object.assign(new Error('HTTP-Code: 403'), { code: 403, body: JSON.stringify({ message: 'secrets "wl" is forbidden' }) })
  }
  const forbidden = await runPass(cellNodeSet([]), d)
  t.equal(forbidden.reachable, 'CredentialInvalid')
  t.match(
    (infra.statuses[1] as Record<string, any>).conditions[0].message,
    'the agent may not read Secret ns/wl: secrets "wl" is forbidden'
  )

  d.secret = async () => {
    throw new Error('get Secret ns/wl: no answer within 10000 ms')
  }
  const failed = await runPass(cellNodeSet([]), d)
  t.same(failed.errors, [{ reason: 'SecretRead', message: 'Secret ns/wl: get Secret ns/wl: no answer within 10000 ms' }])
  t.equal(infra.statuses.length, 2, 'nothing is written while the Secret cannot be read')
  t.same(workload.calls, [])
})

t.test('a CellNodeSet that is not served gets nothing written', async (t) => {
  const workload = new FakeWorkload()
  const infra = new FakeInfra()
  infra.pool = { metadata: { name: 'pool', uid: 'someone-else' } }
  const report = await runPass(cellNodeSet([]), deps(workload, infra, { now: NOW }))
  t.equal(report.served, false)
  t.match(report.notServed, /has uid someone-else/)
  t.same(infra.calls, [])
  t.same(workload.calls, [])
})

t.test('an invalid spec is not served and never throws', async (t) => {
  const infra = new FakeInfra()
  for (const object of [null, 'x', { metadata: {} }, { metadata: { name: 'a', namespace: 'b' }, spec: { poolUID: 5 } }]) {
    const report = await runPass(object, deps(new FakeWorkload(), infra, { now: NOW }))
    t.equal(report.served, false)
  }
  t.same(infra.calls, [])
})

t.test('a deleting CellNodeSet with a live Node left after 15 minutes: Warning Event naming it, then the finalizer goes', async (t) => {
  const workload = new FakeWorkload()
  const infra = new FakeInfra()
  const clock = { now: NOW }
  workload.nodes.set('pool-0', node('pool-0', 'g0'))
  const object = cellNodeSet([], { deletionTimestamp: new Date(NOW - 15 * 60_000).toISOString() })
  let renew = 0
  const tracker = new HeartbeatTracker()
  // The kubelet keeps renewing: the Node is live and is never deleted.
  for (let s = 0; s <= 120; s += 15) {
    workload.leases.set('pool-0', `r${renew++}`)
    clock.now = NOW + s * 1000
    await runPass(object, deps(workload, infra, clock, tracker))
  }
  t.same(workload.writes(), [])
  t.ok(
    infra.calls.some(
      (c) =>
        c ===
        'event NodesLeftBehind: Releasing the CellNodeSet (15 minutes have passed since the CellNodeSet was deleted); these Nodes of the pool are left in the workload cluster: pool-0'
    )
  )
  t.ok(infra.calls.includes('finalizers ["cells.kubeswift.io/workload-nodes"] -> []'))
})

const refusedDeletions = [
  {
    name: 'a Node already deleted by someone else is neither an error nor recorded as swept',
    error: Object.assign(new Error('NotFound'), { code: 404 }),
    failedCodes: []
  },
  {
    name: 'a refused deletion (the Node changed since it was read: 409) is reported and not recorded as swept',
    error: Object.assign(new Error('Precondition failed'), { code: 409 }),
    failedCodes: [409]
  }
]
for (const c of refusedDeletions) {
  t.test(c.name, async (t) => {
    const { applyNodeActions } = await import('../../hooks/agent/nodeset/actions.ts')
    const workload = new FakeWorkload()
    workload.deleteNode = async () => {
      throw c.error
    }
    const outcome = await applyNodeActions(
      workload,
      [{ type: 'deleteNode', name: 'pool-0', uid: 'u', resourceVersion: '1', reason: 'Orphan', instance: 'g' }],
      () => new Date(NOW)
    )
    t.same(outcome.swept, [], 'nothing recorded as swept')
    t.same(outcome.done, [])
    t.same(
      outcome.failed.map((f) => f.code),
      c.failedCodes
    )
  })
}

t.test('an unreadable Lease falls back to the Ready heartbeat; a failed Pod list is read: false', async (t) => {
  const workload = new FakeWorkload()
  workload.nodes.set('pool-0', node('pool-0', 'g0'))
  workload.getNodeLease = async () => {
    throw Object.assign(new Error('Forbidden'), { code: 403 })
  }
  workload.listPods = async () => {
    throw new Error('timeout')
  }
  workload.listPodPage = async () => {
    throw new Error('timeout')
  }
  const snapshot = await observe(workload, { poolUID: POOL_UID }, new HeartbeatTracker(), NOW)
  t.equal(snapshot.reachability.reason, 'Reachable')
  t.same(snapshot.nodes[0]?.beats, { watchedSince: NOW, heartbeat: { value: '2001-01-01T00:00:00Z', changedAt: NOW } })
  t.same(snapshot.nodes[0]?.pods, { read: false, items: [] })
  t.same(snapshot.unbound, { read: false, items: [] })
})

t.test('a failed Node read is classified, and every heartbeat is watched afresh afterwards', async (t) => {
  const workload = new FakeWorkload()
  const tracker = new HeartbeatTracker()
  workload.nodes.set('pool-0', node('pool-0', 'g0'))
  workload.leases.set('pool-0', 'r1')
  await observe(workload, { poolUID: POOL_UID }, tracker, NOW)
  workload.down = Object.assign(new Error('Unauthorized'), { code: 401 })
  const down = await observe(workload, { poolUID: POOL_UID }, tracker, NOW + 30_000)
  t.same(down.reachability, {
    reason: 'CredentialInvalid',
    message: "HTTP 401: the workload cluster refused the kubeconfig's credential: Unauthorized"
  })
  workload.down = undefined
  const back = await observe(workload, { poolUID: POOL_UID }, tracker, NOW + 60_000)
  t.same(
    back.nodes[0]?.beats,
    {
      watchedSince: NOW + 60_000,
      lease: { value: 'r1', changedAt: NOW + 60_000 },
      heartbeat: { value: '2001-01-01T00:00:00Z', changedAt: NOW + 60_000 }
    },
    'the Lease that did not change during the outage is not held against its kubelet'
  )
})

t.test('one client per kubeconfig Secret, rebuilt when its resourceVersion changes', async (t) => {
  const { ClientCache } = await import('../../hooks/agent/runtime/clients.ts')
  const built: string[] = []
  const cache = new ClientCache((config) => {
    built.push(config.token ?? '')
    return { token: config.token }
  })
  const first = cache.get('ns/wl', '5', { server: 'https://a', token: 't1' })
  const again = cache.get('ns/wl', '5', { server: 'https://a', token: 't1' })
  t.equal(again.client, first.client)
  t.same([first.built, again.built], [true, false])
  const rotated = cache.get('ns/wl', '6', { server: 'https://a', token: 't2' })
  t.not(rotated.client, first.client)
  t.same(rotated.client, { token: 't2' })
  cache.get('ns/other', '5', { server: 'https://b', token: 't3' })
  t.same(built, ['t1', 't2', 't3'])
})

t.test('a stored status of the wrong shape is read part by part: the pass serves, rewrites it, and names what it left out', async (t) => {
  const workload = new FakeWorkload()
  const infra = new FakeInfra()
  const object = {
    ...cellNodeSet([{ name: 'pool-0', instance: 'g0' }]),
    status: { swept: { last: 'pool-9' }, nodes: 'pool-0', nodeCount: 0 }
  }
  const report = await runPass(object, deps(workload, infra, { now: NOW }))
  t.equal(report.served, true)
  t.same(report.errors, [])
  t.same(report.statusProblems, ['status.nodes is a string, not a list', 'status.swept is an object, not a list'])
  t.equal(report.statusWritten, true)
  t.match(infra.statuses[0], { nodeCount: 0, nodes: [{ name: 'pool-0', present: false }] })
  t.notOk(Object.hasOwn(infra.statuses[0] as object, 'swept'), 'the unreadable swept list is not written back')
})

t.test('an invalid spec is not served, and every failing field is named', async (t) => {
  const object = cellNodeSet([{ name: '' }, { name: 'pool-1', cordon: 'yes' }])
  object.spec.poolUID = ''
  const report = await runPass(object, deps(new FakeWorkload(), new FakeInfra(), { now: NOW }))
  t.equal(report.served, false)
  t.equal(
    report.notServed,
    'spec.poolUID must not be empty; spec.nodes[0].name must not be empty; spec.nodes[1].cordon is a string, not true or false'
  )
})
