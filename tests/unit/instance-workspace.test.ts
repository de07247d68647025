/**
 * The persistent workspace (docs/instance.md, "The persistent workspace"): the claim
 * `<instance>-workspace` rendered whether the Instance runs or not, kept on a spec error, grown in
 * place only where the API server takes it, mounted by the Pod, reported in status.
 */
import t from 'tap'
import fc from 'fast-check'
import { reviewInstance } from '../../hooks/instance/admission.ts'
import { customize } from '../../hooks/instance/customize.ts'
import { finalize } from '../../hooks/instance/finalize.ts'
import { sync } from '../../hooks/instance/sync.ts'
import { specProblems } from '../../hooks/instance/validate.ts'
import { compareQuantities } from '../../hooks/k8s/quantity.ts'
import { keepAsIs } from '../../hooks/metacontroller/keep.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import {
  NAME,
  NOW,
  NS,
  POD_STATUS,
  InstanceWorld,
  baseSpec,
  instance,
  instanceType,
  namespaceObject,
  storageClass
} from './fixtures/instance.ts'

const CLAIM = `${NAME}-workspace`
const persistentSpec = (persistent: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  baseSpec({ workspace: { persistent }, ...extra })

function world(persistent: Record<string, unknown>, classes: KubeObject[] = [storageClass('fast', { expands: true })]): InstanceWorld {
  return new InstanceWorld(persistentSpec(persistent), { related: [instanceType(), namespaceObject(), ...classes] })
}

const claimSpec = (w: InstanceWorld) => w.workspaceClaim()?.spec as Record<string, any> | undefined
const condition = (status: Record<string, any>, type: string) =>
  (status.conditions as Array<Record<string, string>>).find((c) => c.type === type)

t.test('a persistent workspace renders its claim and the Pod mounts it', async (t) => {
  const w = world({ size: '10Gi', storageClassName: 'fast' })
  const answer = w.settle(sync)
  const answered = answer.children.find((c) => c.kind === 'PersistentVolumeClaim')
  t.same(answered?.metadata, {
    name: CLAIM,
    namespace: NS,
    labels: { 'app.kubernetes.io/part-of': NAME, 'app.kubernetes.io/managed-by': 'gpuhooks' }
  })
  t.same(claimSpec(w), {
    accessModes: ['ReadWriteOnce'],
    resources: { requests: { storage: '10Gi' } },
    storageClassName: 'fast',
    volumeMode: 'Filesystem'
  })
  const volumes = (w.pod()?.spec as Record<string, any>).volumes as unknown[]
  t.same(volumes[0], { name: 'workspace', persistentVolumeClaim: { claimName: CLAIM } })
  t.same(answer.status.workspace, {
    claimName: CLAIM,
    phase: 'Pending',
    requested: '10Gi',
    storageClassName: 'fast',
    message: `PersistentVolumeClaim ${CLAIM} is Pending: no PersistentVolume of StorageClass fast is bound to it yet.`
  })
  t.equal(answer.status.phase, 'Pending')
  t.equal(condition(answer.status, 'Ready')?.reason, 'WorkspacePending')
  t.match(answer.status.message, /is Pending: no PersistentVolume of StorageClass fast/)
})

t.test('without a class the claim names none, and the default class answers for it', async (t) => {
  const w = world({ size: 1073741824 }, [storageClass('standard', { isDefault: true, mode: 'WaitForFirstConsumer' })])
  const answer = w.settle(sync)
  t.same(claimSpec(w)?.resources, { requests: { storage: '1073741824' } })
  t.notOk('storageClassName' in (claimSpec(w) ?? {}))
  // WaitForFirstConsumer: the claim waits for the scheduler; the Pod's own reason stands.
  t.equal(condition(answer.status, 'Ready')?.reason, 'Pending')
  t.match(answer.status.workspace, { message: /until the Pod is scheduled: StorageClass standard .*WaitForFirstConsumer/ })
  const claim = w.workspaceClaim() as KubeObject
  claim.metadata.annotations = { 'volume.kubernetes.io/selected-node': '<tenant text>' }
  const chosen = w.pass(sync)
  t.equal(condition(chosen.status, 'Ready')?.reason, 'WorkspacePending')
  t.notMatch(JSON.stringify(chosen.status), /tenant text/, 'the chosen node is not named')
})

t.test('stop keeps the claim and the Service; start mounts the same claim', async (t) => {
  const w = world({ size: '10Gi', storageClassName: 'fast' })
  w.settle(sync)
  w.bindClaim('10Gi')
  const uid = w.workspaceClaim()?.metadata.uid
  w.edit({ stop: true })
  const stopped = w.settle(sync)
  t.equal(w.pod(), undefined)
  t.equal(w.workspaceClaim()?.metadata.uid, uid)
  t.same(stopped.status.workspace, { claimName: CLAIM, phase: 'Bound', capacity: '10Gi', requested: '10Gi', storageClassName: 'fast' })
  w.edit({ stop: false })
  w.settle(sync)
  t.equal(w.workspaceClaim()?.metadata.uid, uid)
  t.ok(w.pod())
})

t.test('a grown size updates the bound claim in place; an equal one in another spelling writes nothing', async (t) => {
  const w = world({ size: '10Gi', storageClassName: 'fast' })
  w.settle(sync)
  w.bindClaim('10Gi')
  w.edit({ workspace: { persistent: { size: '10240Mi', storageClassName: 'fast' } } })
  w.settle(sync)
  t.equal(claimSpec(w)?.resources.requests.storage, '10Gi', 'the observed spelling is answered')
  w.edit({ workspace: { persistent: { size: '20Gi', storageClassName: 'fast' } } })
  w.settle(sync)
  t.equal(claimSpec(w)?.resources.requests.storage, '20Gi')
})

t.test('a grow the API server would refuse is held and reported', async (t) => {
  const fixed = world({ size: '10Gi', storageClassName: 'fast' }, [storageClass('fast', { expands: false })])
  fixed.settle(sync)
  fixed.bindClaim('10Gi')
  fixed.edit({ workspace: { persistent: { size: '20Gi', storageClassName: 'fast' } } })
  const held = fixed.settle(sync)
  t.equal(claimSpec(fixed)?.resources.requests.storage, '10Gi')
  t.match(held.status.workspace, { message: /20Gi waits: StorageClass fast does not allow volume expansion/ })
  const unbound = world({ size: '10Gi', storageClassName: 'fast' })
  unbound.settle(sync)
  unbound.edit({ workspace: { persistent: { size: '20Gi', storageClassName: 'fast' } } })
  t.match(unbound.settle(sync).status.workspace, { message: /waits: the claim is not Bound yet/ })
  t.equal(claimSpec(unbound)?.resources.requests.storage, '10Gi')
})

t.test('a shrink, a class change or a removal stored around admission keeps the claim as observed', async (t) => {
  for (const [name, workspace, said] of [
    ['shrink', { persistent: { size: '5Gi', storageClassName: 'fast' } }, /5Gi is below the claim's 10Gi/],
    ['class', { persistent: { size: '10Gi', storageClassName: 'slow' } }, /slow differs from the claim's class fast/],
    ['removal', {}, /persistent is absent; PersistentVolumeClaim ws-workspace is kept/]
  ] as const) {
    const w = world({ size: '10Gi', storageClassName: 'fast' })
    w.settle(sync)
    w.bindClaim('10Gi')
    const before = structuredClone(w.workspaceClaim())
    w.edit({ workspace })
    const answer = w.settle(sync)
    t.same(w.workspaceClaim(), before, `${name}: the claim is unchanged`)
    t.match(answer.status.workspace, { message: said }, name)
  }
})

t.test('a spec error keeps the claim; stop with a spec error keeps it too', async (t) => {
  const w = world({ size: '10Gi', storageClassName: 'fast' })
  w.settle(sync)
  const before = structuredClone(w.workspaceClaim())
  w.edit({ type: 'gone' })
  const answer = w.settle(sync)
  t.equal(condition(answer.status, 'SpecValid')?.status, 'False')
  t.same(w.workspaceClaim(), before)
  w.edit({ stop: true })
  w.settle(sync)
  t.equal(w.pod(), undefined)
  t.same(w.workspaceClaim(), before)
})

t.test('finalize deletes the claim and waits for it to be gone', async (t) => {
  const w = world({ size: '10Gi' })
  w.settle(sync)
  const first = w.pass(finalize, true)
  t.notOk(first.children.some((c) => c.kind === 'PersistentVolumeClaim'))
  t.equal(first.finalized, false)
  t.equal(w.workspaceClaim(), undefined)
  t.equal(w.pass(finalize, true).finalized, true)
})

t.test('customize relates the StorageClasses of a persistent workspace only', async (t) => {
  const rules = (spec: Record<string, unknown>) =>
    customize({ controller: {}, parent: instance(spec) }).relatedResources.filter((r) => r.resource === 'storageclasses')
  t.same(rules(persistentSpec({ size: '1Gi' })), [{ apiVersion: 'storage.k8s.io/v1', resource: 'storageclasses' }])
  t.same(rules(baseSpec()), [])
})

t.test('the spec rules: exclusive kinds, a size above zero', async (t) => {
  const fields = (workspace: unknown) => specProblems(baseSpec({ workspace })).map((p) => p.message)
  t.same(fields({ persistent: { size: '1Gi', storageClassName: 'fast' } }), [])
  t.match(fields({ persistent: { size: '1Gi' }, size: '1Gi' }), [/persistent and spec.workspace.size are exclusive/])
  t.match(fields({ persistent: { size: '1Gi' }, claimName: 'x' }), [/persistent and spec.workspace.claimName are exclusive/])
  t.match(fields({ persistent: { size: '0' } }), [/persistent.size "?0"? must be above zero/])
  t.match(fields({ persistent: { size: 0 } }), [/must be above zero/])
  t.match(fields({ persistent: {} }), [/size/])
  t.match(fields({ persistent: { size: '1Gi', storageClassName: 'Not_A_Name' } }), [/storageClassName/])
})

t.test('admission refuses a shrink, a class change and a removal, naming the field', async (t) => {
  const review = (was: unknown, now: unknown) =>
    reviewInstance({
      uid: 'u',
      operation: 'UPDATE',
      name: NAME,
      namespace: NS,
      object: instance(baseSpec({ stop: true, workspace: now })),
      oldObject: instance(baseSpec({ stop: true, workspace: was }))
    } as never).problems
  const old = { persistent: { size: '10Gi', storageClassName: 'fast' } }
  t.same(review(old, { persistent: { size: '20Gi', storageClassName: 'fast' } }), [])
  t.same(review(old, { persistent: { size: 10737418240, storageClassName: 'fast' } }), [], 'the same amount')
  t.match(review(old, { persistent: { size: '9Gi', storageClassName: 'fast' } }), [/^spec.workspace.persistent.size may only grow/])
  t.match(review(old, { persistent: { size: '10Gi' } }), [/^spec.workspace.persistent.storageClassName cannot change/])
  t.match(review(old, {}), [/^spec.workspace.persistent cannot be removed/])
  t.same(review({}, old), [], 'adding a persistent workspace to a stopped Instance')
})

t.test('quantities compare exactly', async (t) => {
  t.equal(compareQuantities('1Gi', '1024Mi'), 0)
  t.equal(compareQuantities('1Gi', 1073741824), 0)
  t.equal(compareQuantities('1G', '1Gi'), -1)
  t.equal(compareQuantities('1.5Gi', '1536Mi'), 0)
  t.equal(compareQuantities('1e3', '1k'), 0)
  t.equal(compareQuantities('100m', '0.1'), 0)
  t.equal(compareQuantities('-1', 0), -1)
  t.equal(compareQuantities('1e999', 0), undefined)
  t.equal(compareQuantities('.', 0), undefined)
  t.equal(compareQuantities(1.5, 0), undefined)
})

/** Observed claims of any shape: spec, status, metadata a tenant may have written. */
const hostileClaim = fc.record({
  spec: fc.anything(),
  status: fc.oneof(
    fc.anything(),
    fc.record({ phase: fc.oneof(fc.string(), fc.constantFrom('Pending', 'Bound', 'Lost')), capacity: fc.anything() })
  ),
  annotations: fc.option(fc.dictionary(fc.string(), fc.string())),
  deleting: fc.boolean()
})

t.test('hostile observed claims: no throw, only known shapes in status, nothing tenant-written answered', async (t) => {
  fc.assert(
    fc.property(hostileClaim, fc.boolean(), fc.boolean(), (shape, stop, broken) => {
      const w = world({ size: '10Gi', storageClassName: 'fast' })
      w.settle(sync)
      const claim = w.workspaceClaim() as KubeObject
      claim.spec = shape.spec !== null && typeof shape.spec === 'object' ? { ...shape.spec, tenant: 'TENANT-TEXT' } : shape.spec
      claim.status = shape.status
      if (shape.annotations !== null) claim.metadata.annotations = { ...shape.annotations, note: 'TENANT-TEXT' }
      if (shape.deleting) claim.metadata = { ...claim.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' }
      w.edit({ stop, ...(broken ? { type: 'gone' } : {}) })
      const answer = sync(w.request(), NOW)
      if (JSON.stringify(answer.status).includes('TENANT-TEXT')) throw new Error('tenant text in status')
      const answered = answer.children.find((c) => c.kind === 'PersistentVolumeClaim')
      if (answered === undefined) throw new Error('the claim was dropped')
      // Kept as observed (no write), or rendered from the spec alone.
      const kept = JSON.stringify(answered) === JSON.stringify(keepAsIs(claim))
      if (!kept && JSON.stringify(answered).includes('TENANT-TEXT')) throw new Error('tenant text answered')
      const ws = answer.status.workspace as Record<string, unknown>
      if (ws.phase !== undefined && !['Pending', 'Bound', 'Lost'].includes(String(ws.phase))) throw new Error('unknown phase')
      if (ws.capacity !== undefined && compareQuantities(ws.capacity, 0) === undefined) throw new Error('capacity no quantity')
    }),
    { numRuns: 200 }
  )
  t.pass('held')
})

t.test('a Lost claim says so while the Pod waits', async (t) => {
  const w = world({ size: '10Gi', storageClassName: 'fast' })
  w.settle(sync)
  ;(w.workspaceClaim() as KubeObject).status = { phase: 'Lost' }
  const answer = w.pass(sync)
  t.equal(condition(answer.status, 'Ready')?.reason, 'WorkspaceLost')
  w.stampPod(POD_STATUS.running)
  t.equal(condition(w.pass(sync).status, 'Ready')?.reason, 'Running', 'a running Pod is not overruled')
})
