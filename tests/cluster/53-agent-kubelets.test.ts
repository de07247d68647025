// The workload agent against kubelets that have their own identities (docs/security.md, "The
// workload cluster"; issue 28, findings 3 and 4). The workload API server authorizes as a real
// cluster does, with the Node authorizer and NodeRestriction, and each kubelet here speaks with a
// client certificate for system:node:<name>. What a kubelet may write on its own Node (its
// annotations, its instance label) must decide neither what the agent removes nor which Node is
// a cell's; and what NodeRestriction refuses a kubelet, the facts that choice rests on, is checked
// on the same API server. Everything is polled for; passes run every second.
import t, { type Test } from 'tap'
import { Kubelets, nodeRef } from './support/agent.ts'
import { startAgentWorld } from './support/agent-world.ts'
import { isReason, type KubeClient } from './support/kube.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

const NS = 'tenant'
const POOL = 'pool-b'
const MANAGED = 'cells.kubeswift.io/managed'
const QUARANTINE = { key: 'example.com/quarantine', value: 'incident-42', effect: 'NoExecute' }
const TRUSTED = 'node-restriction.kubernetes.io/quarantined'

const world = await startAgentWorld(NS, POOL)
const { workload, wl, cns, row, until, morePasses, setNodes } = world
const POOL_UID = world.poolUID
const kubelets: Kubelets[] = []
t.teardown(async () => {
  for (const k of kubelets) k.stopAll()
  await world.stop()
})

/** A kubelet of Node `name`: its own client (system:node:<name>) and its Lease renewals. */
async function kubeletOf(name: string): Promise<{ client: KubeClient; kubelet: Kubelets }> {
  const client = await workload.kubelet(name)
  world.closeLater(client)
  const kubelet = new Kubelets(client)
  kubelets.push(kubelet)
  return { client, kubelet }
}

/** A spec entry as the cellpool hook writes it: a role label a kubelet may not set itself, a label, a taint. */
const cellNode = (name: string, instance: string, labels: Record<string, string> = { team: 'ml' }): Loose => ({
  name,
  instance,
  labels: { ...labels, 'node-role.kubernetes.io/gpu-cell': '' },
  annotations: {},
  taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }],
  cordon: false
})
/** What a cell's kubelet registers from its bootstrap: the pool uid, and no instance (not known when it was rendered). */
const REGISTERED = { 'cells.kubeswift.io/pool-uid': POOL_UID }

const nodeOf = async (name: string): Promise<Loose> => {
  try {
    return (await wl.get(nodeRef(name))).body
  } catch (error) {
    if (isReason(error, 'NotFound')) return undefined
    throw error
  }
}
/** The API server's refusal of `write`, or a failure naming what it let through. */
async function refused(t: Test, what: string, write: () => Promise<unknown>, message: RegExp): Promise<void> {
  try {
    await write()
    t.fail(`${what}: the API server let it through`)
  } catch (error) {
    t.ok(isReason(error, 'Forbidden'), `${what}: Forbidden (${(error as Error).message})`)
    t.match((error as Error).message, message)
  }
}

const cell0 = await kubeletOf('pool-b-0')
const cell1 = await kubeletOf('pool-b-1')
const impostor = await kubeletOf('impostor')
const stranger = await kubeletOf('stranger-0')

t.test('what NodeRestriction leaves a kubelet, on this API server', async (t) => {
  await refused(
    t,
    'a kubelet creating a Node under another name',
    () => impostor.client.create(nodeRef('pool-b-9'), { apiVersion: 'v1', kind: 'Node', metadata: { name: 'pool-b-9' } }),
    /node "impostor" is not allowed to modify node "pool-b-9"/
  )
  // A kubelet chooses its Node's providerID (kubelet --provider-id) and may carry the pool uid label.
  await stranger.client.create(nodeRef('stranger-0'), {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'stranger-0', labels: REGISTERED },
    spec: { providerID: `kubeswift://${NS}/pool-b-0` }
  })
  t.equal((await nodeOf('stranger-0')).spec.providerID, `kubeswift://${NS}/pool-b-0`, 'its providerID is what the kubelet said')
  const c = await until('the stranger reported', async () => {
    const c = await cns()
    return c.status?.foreignNodes === 1 ? c : undefined
  })
  t.equal(c.status.nodeCount, 0, 'a Node under a name no cell has is not counted as the pool')
})

t.test("a cell's kubelet registers; the agent adopts its Node", async (t) => {
  await setNodes([cellNode('pool-b-0', 'guest-0')])
  await until('the Node reported absent', async () => (row(await cns(), 'pool-b-0')?.present === false ? true : undefined))
  await cell0.kubelet.join('pool-b-0', REGISTERED)
  const node = await until('the Node adopted', async () => {
    const n = await nodeOf('pool-b-0')
    return n?.metadata?.labels?.['cells.kubeswift.io/instance'] === 'guest-0' && (n.spec.taints ?? []).some((x: Loose) => x.key === 'gpu')
      ? n
      : undefined
  })
  t.equal(node.metadata.labels['node-role.kubernetes.io/gpu-cell'], '', 'the role label a kubelet may not set itself')
  const adopted = await until('the row counts it', async () => {
    const r = row(await cns(), 'pool-b-0')
    return r?.instance === 'guest-0' ? r : undefined
  })
  t.equal(adopted.applied.uid, node.metadata.uid, 'the record names this Node object')
})

t.test('finding 3: a record the kubelet forges makes the agent remove nothing', async (t) => {
  // An admin quarantines the Node: a NoExecute taint, a label kubelets may not touch, a cordon.
  // The taint list is replaced whole, so the write names the version it read (the agent may write meanwhile).
  const before = await until('the quarantine written', async () => {
    const seen = await nodeOf('pool-b-0')
    try {
      await wl.patch(
        nodeRef('pool-b-0'),
        {
          metadata: { resourceVersion: seen.metadata.resourceVersion, labels: { [TRUSTED]: 'true' } },
          spec: { taints: [...(seen.spec.taints ?? []), QUARANTINE], unschedulable: true }
        },
        'merge'
      )
      return seen
    } catch (error) {
      if (isReason(error, 'Conflict')) return undefined
      throw error
    }
  })
  await refused(
    t,
    'the kubelet lifting the quarantine taint itself',
    () => cell0.client.patch(nodeRef('pool-b-0'), { spec: { taints: before.spec.taints ?? [] } }, 'merge'),
    /not allowed to modify taints/
  )
  await refused(
    t,
    'the kubelet removing the trusted label itself',
    () => cell0.client.patch(nodeRef('pool-b-0'), { metadata: { labels: { [TRUSTED]: null } } }, 'merge'),
    /not allowed to modify labels: node-restriction\.kubernetes\.io\/quarantined/
  )
  // What it may write: its own annotations. It names the quarantine as the agent's own doing.
  const forged = JSON.stringify({
    labels: ['cells.kubeswift.io/instance', 'team', TRUSTED],
    annotations: [],
    taints: [{ key: QUARANTINE.key, effect: QUARANTINE.effect }],
    cordoned: true
  })
  await cell0.client.patch(nodeRef('pool-b-0'), { metadata: { annotations: { [MANAGED]: forged } } }, 'merge')
  // The pool stops asking for `team`: the agent removes the label it recorded, and nothing else.
  await setNodes([cellNode('pool-b-0', 'guest-0', {})])
  await until('team removed', async () => ((await nodeOf('pool-b-0')).metadata.labels.team === undefined ? true : undefined))
  await morePasses(3)
  const after = await nodeOf('pool-b-0')
  t.ok(
    (after.spec.taints ?? []).some((x: Loose) => x.key === QUARANTINE.key && x.effect === 'NoExecute'),
    'the quarantine taint is there'
  )
  t.equal(after.metadata.labels[TRUSTED], 'true', 'the trusted label stays')
  t.equal(after.spec.unschedulable, true, "the admin's cordon stays")
  t.equal(after.metadata.labels['cells.kubeswift.io/instance'], 'guest-0', 'the instance label stays')
  t.same(row(await cns(), 'pool-b-0').applied.taints, [{ key: 'gpu', effect: 'NoSchedule' }], 'the record claims only its own taint')
  // A cordon, unlike the taint and the label, is the kubelet's to lift (NodeRestriction does not check it).
  await cell0.client.patch(nodeRef('pool-b-0'), { spec: { unschedulable: false } }, 'merge')
  t.not((await nodeOf('pool-b-0')).spec.unschedulable, true, 'the kubelet uncordoned its own Node')
})

t.test('finding 4: a Node that registers already claiming the guest is not the cell', async (t) => {
  await setNodes([cellNode('pool-b-0', 'guest-0', {}), cellNode('pool-b-1', 'guest-1')])
  await until('pool-b-1 reported absent', async () => (row(await cns(), 'pool-b-1')?.present === false ? true : undefined))
  await refused(
    t,
    'another kubelet registering under the cell name',
    () =>
      impostor.client.create(nodeRef('pool-b-1'), { apiVersion: 'v1', kind: 'Node', metadata: { name: 'pool-b-1', labels: REGISTERED } }),
    /node "impostor" is not allowed to modify node "pool-b-1"/
  )
  // A holder of a credential for the cell's name (the pool's join token mints one for any name)
  // registers first, with the guest's instance label on itself.
  await cell1.kubelet.join('pool-b-1', { ...REGISTERED, 'cells.kubeswift.io/instance': 'guest-1' })
  const r = await until('the row of the impostor Node', async () => {
    const r = row(await cns(), 'pool-b-1')
    return r?.present === true ? r : undefined
  })
  t.equal(r.instance, '', 'not counted as the cell: the pool hook counts a Node by the instance the agent vouches for')
  t.equal(r.conflict, true)
  t.match(r.message, /did not write it onto this Node object/)
  await morePasses(3)
  const node = await nodeOf('pool-b-1')
  t.equal(node.metadata.labels['node-role.kubernetes.io/gpu-cell'], undefined, 'no role label written')
  t.equal(node.metadata.labels.team, undefined, 'no pool label written')
  // The API server's TaintNodesByCondition puts not-ready on a new Node; the pool's taint is not there.
  t.notOk(
    (node.spec.taints ?? []).some((x: Loose) => x.key === 'gpu'),
    "the pool's taint not written"
  )
  t.equal(row(await cns(), 'pool-b-1').applied, undefined, 'nothing recorded for it')

  // It stops heartbeating: deleted as stale; the guest's own kubelet then registers and is adopted.
  cell1.kubelet.stop('pool-b-1')
  await until('the impostor Node swept', async () => ((await nodeOf('pool-b-1')) === undefined ? true : undefined), 90_000)
  await cell1.kubelet.join('pool-b-1', REGISTERED)
  await until('the real registration adopted', async () => (row(await cns(), 'pool-b-1')?.instance === 'guest-1' ? true : undefined))
  t.equal((await nodeOf('pool-b-1')).metadata.labels['node-role.kubernetes.io/gpu-cell'], '')
  const c = await cns()
  t.equal(c.status.nodeCount, 2, 'the two cells')
  t.equal(c.status.foreignNodes, 1, 'and the stranger, reported apart')
  t.ok(await nodeOf('stranger-0'), 'the stranger is never deleted, though it never heartbeats')
})
