// Why a composite parent is synced (tests/cluster/support/driver-events.ts): which watch events
// queue it, as Metacontroller's event handlers decide, with and without
// `parentResource.ignoreStatusChanges`.
import t from 'tap'
import type { JsonObject } from '../support/merge.ts'
import { childEventParent, parentUpdateCause } from '../cluster/support/driver-events.ts'
import { loadControllers, parseControllers, type CompositeSpec } from '../cluster/support/driver-manifest.ts'

const project = loadControllers().find((c) => c.name === 'gpuhooks-instance') as CompositeSpec
const watchingStatus: CompositeSpec = { ...project, ignoreStatusChanges: false }

const FINALIZER = 'metacontroller.io/compositecontroller-gpuhooks-instance'
const instance = (metadata: JsonObject = {}, status?: JsonObject): JsonObject => ({
  apiVersion: 'worker.gpustack.ai/v1alpha1',
  kind: 'Instance',
  metadata: { name: 'ws', namespace: 'team', generation: 1, labels: { a: 'b' }, ...metadata },
  ...(status !== undefined ? { status } : {})
})

t.test('the manifests say whether status changes queue a parent', async (t) => {
  t.equal(project.ignoreStatusChanges, true, 'the Instance controller ignores its own status writes')
  const [plain] = parseControllers(
    'apiVersion: metacontroller.k8s.io/v1alpha1\nkind: CompositeController\nmetadata: {name: x}\nspec: {parentResource: {apiVersion: a/v1, resource: xs}}'
  )
  t.equal(plain?.kind === 'CompositeController' && plain.ignoreStatusChanges, false, 'left out, every update queues the parent')
})

t.test('an update of the parent', async (t) => {
  const before = instance({}, { phase: 'Pending' })
  const cases: Array<{ name: string; after: JsonObject; ignoring: string | undefined; watching: string }> = [
    {
      name: 'its status written',
      after: instance({}, { phase: 'Pending', nodePorts: '8888:30001/TCP' }),
      ignoring: undefined,
      watching: 'status'
    },
    {
      name: 'the finalizer added',
      after: instance({ finalizers: [FINALIZER] }, { phase: 'Pending' }),
      ignoring: undefined,
      watching: 'finalizer'
    },
    { name: 'the spec edited', after: instance({ generation: 2 }, { phase: 'Pending' }), ignoring: 'parent', watching: 'parent' },
    { name: 'a label changed', after: instance({ labels: { a: 'c' } }, { phase: 'Pending' }), ignoring: 'parent', watching: 'parent' },
    {
      name: 'an annotation added',
      after: instance({ annotations: { n: 'x' } }, { phase: 'Pending' }),
      ignoring: 'parent',
      watching: 'parent'
    },
    {
      name: 'deleted, with its status written',
      after: instance({ deletionTimestamp: '2026-01-01T00:00:00Z' }, { phase: 'Deleting' }),
      ignoring: 'parent',
      watching: 'parent'
    },
    {
      name: 'nothing changed but its resourceVersion',
      after: instance({ resourceVersion: '9' }, { phase: 'Pending' }),
      ignoring: undefined,
      watching: 'parent'
    }
  ]
  for (const c of cases) {
    t.equal(parentUpdateCause(project, before, c.after), c.ignoring, `${c.name}: with ignoreStatusChanges`)
    t.equal(parentUpdateCause(watchingStatus, before, c.after), c.watching, `${c.name}: without`)
  }
  t.equal(parentUpdateCause(project, before, before), 'parent', 'a resync re-delivers the object and queues it either way')
})

t.test('a child event queues the parent its controller reference names', async (t) => {
  const child = (refs: JsonObject[]): JsonObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'ws', ownerReferences: refs } })
  const ref = (over: JsonObject = {}): JsonObject => ({
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    name: 'ws',
    uid: 'u',
    controller: true,
    ...over
  })
  t.equal(childEventParent(project, 'Instance', child([ref()])), 'ws')
  t.equal(childEventParent(project, 'Instance', child([ref({ controller: false })])), undefined, 'an owner that is not the controller')
  t.equal(childEventParent(project, 'Instance', child([ref({ kind: 'ReplicaSet' })])), undefined, 'another kind')
  t.equal(childEventParent(project, 'Instance', child([ref({ apiVersion: 'other.example/v1' })])), undefined, 'another group')
  t.equal(childEventParent(project, 'Instance', child([])), undefined, 'an orphan')
})
