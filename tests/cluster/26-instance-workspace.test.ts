/**
 * The persistent workspace against a real API server (docs/instance.md, "The persistent
 * workspace"): the claim as the API server stores it (the default class written by its
 * DefaultStorageClass plugin, volumeMode defaulted, the pvc-protection finalizer), owned by the
 * Instance, kept across stop with no update loop, a grow held until the claim is Bound and then
 * taken by the PersistentVolumeClaimResize plugin, and deleted with the Instance. No binder runs
 * here: the claim's Bound status is stamped as the binder would write it. The binder, the Pod and
 * the files: 78-node-workspace.test.ts.
 */
import t from 'tap'
import { eventually } from './support/env.ts'
import { startScenario } from './support/scenario.ts'
import { apply } from './support/kubectl.ts'
import type { ResourceRef } from './support/kube.ts'
import { condition, reader, refs } from './support/reads.ts'

type Obj = any

// The claim's protection finalizer is removed by its controller once no Pod uses the claim.
const env = await startScenario({ cluster: { extraControllers: ['persistentvolumeclaim-protection-controller'] } })
const { kube, cluster } = env
const driver = env.driver('gpuhooks-instance')
const { get, must } = reader<Obj>(kube)
const NS = 'claims'
const NAME = 'lab'
const CLAIM = `${NAME}-workspace`
const claimRef: ResourceRef = { apiVersion: 'v1', resource: 'persistentvolumeclaims', namespace: NS, name: CLAIM }
const instanceRef = refs.instance(NS, NAME)

const settle = () => driver.settle({ namespace: NS, name: NAME }, { maxPasses: 4 })
const patch = (spec: Obj) => cluster.kubectl(['patch', 'instance', NAME, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec })])

t.before(async () => {
  await cluster.kubectl(['create', 'namespace', NS])
  await apply(cluster, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'InstanceType',
    metadata: { name: 'hami' },
    spec: { families: ['Whole'] }
  })
  await apply(cluster, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'standard', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: 'example.com/disk',
    volumeBindingMode: 'Immediate',
    allowVolumeExpansion: true
  })
})

t.test('the claim of a persistent workspace, from create to delete', async (t) => {
  await apply(cluster, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name: NAME, namespace: NS },
    spec: { type: 'hami', image: 'busybox:1.36', workspace: { persistent: { size: '1Gi' } } }
  })
  await settle()
  const instance = await must(instanceRef)
  const claim = await must(claimRef)

  await t.test('created with the default class the API server wrote, owned by the Instance', async (t) => {
    t.match(claim, {
      metadata: {
        labels: { 'app.kubernetes.io/part-of': NAME, 'app.kubernetes.io/managed-by': 'gpuhooks' },
        finalizers: ['kubernetes.io/pvc-protection']
      },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        storageClassName: 'standard',
        volumeMode: 'Filesystem'
      }
    })
    t.match(claim.metadata.ownerReferences, [{ kind: 'Instance', name: NAME, uid: instance.metadata.uid, controller: true }])
    t.same(instance.status.workspace, {
      claimName: CLAIM,
      phase: 'Pending',
      requested: '1Gi',
      storageClassName: 'standard',
      message: `PersistentVolumeClaim ${CLAIM} is Pending: no PersistentVolume of StorageClass standard is bound to it yet.`
    })
    t.same([instance.status.phase, condition(instance, 'Ready')?.reason], ['Pending', 'WorkspacePending'])
    t.equal(instance.status.message, instance.status.workspace.message)
    const pod = await must(refs.pod(NS, NAME))
    t.same(pod.spec.volumes[0], { name: 'workspace', persistentVolumeClaim: { claimName: CLAIM } })
  })

  await t.test('stopped: the Pod goes, the claim stays as it was; the same size in another spelling writes nothing', async (t) => {
    await patch({ stop: true })
    await settle()
    t.equal(await get(refs.pod(NS, NAME)), undefined)
    const kept = await must(claimRef)
    t.same([kept.metadata.uid, kept.metadata.resourceVersion], [claim.metadata.uid, claim.metadata.resourceVersion])
    await patch({ workspace: { persistent: { size: '1024Mi' } } })
    await settle()
    t.equal((await must(claimRef)).metadata.resourceVersion, claim.metadata.resourceVersion, 'no update')
  })

  await t.test('a grow waits for a Bound claim, then updates it in place', async (t) => {
    await patch({ workspace: { persistent: { size: '2Gi' } } })
    await settle()
    t.equal((await must(claimRef)).spec.resources.requests.storage, '1Gi', 'an unbound claim is not grown')
    t.match((await must(instanceRef)).status.workspace.message, /2Gi waits: the claim is not Bound yet/)
    // The binder's part: the claim Bound to a volume of 1Gi.
    const bound = await must(claimRef)
    bound.status = { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } }
    await kube.updateStatus(claimRef, bound)
    await settle()
    const grown = await must(claimRef)
    t.equal(grown.metadata.uid, claim.metadata.uid, 'the same claim')
    t.equal(grown.spec.resources.requests.storage, '2Gi')
    t.match((await must(instanceRef)).status.workspace, { phase: 'Bound', capacity: '1Gi', requested: '2Gi' })
  })

  await t.test('deleting the Instance deletes its claim, and the finalizer holds until it is gone', async (t) => {
    await cluster.kubectl(['delete', 'instance', NAME, '-n', NS, '--wait=false'])
    // Each sync is a watch event's: the Pod goes, the claim and the Service are deleted, the
    // protection controller lets the claim go, the finalizer is removed.
    await eventually('the Instance finalized', async () => {
      if ((await get(instanceRef)) === undefined) return true
      const report = await driver.syncOnce({ namespace: NS, name: NAME })
      if (!report.finalizing) throw new Error('the finalize hook was not called')
      return undefined
    })
    t.equal(await get(claimRef), undefined, 'the claim is gone')
    t.equal(await get(instanceRef), undefined, 'the Instance is gone')
  })
})
