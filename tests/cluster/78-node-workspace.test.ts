/**
 * The persistent workspace on a real node (docs/instance.md, "The persistent workspace"):
 * kube-controller-manager's binder binds the Instance's claim to a pre-created
 * hostPath PersistentVolume of a StorageClass the test names; the workload writes a file into it;
 * stopped, the Pod goes and the claim and the Service stay; started again, the new Pod finds the
 * file. A grown size updates the claim in place (a hostPath volume does not resize: the claim's
 * request is asserted, not its capacity). The `gpuhooks-instance` driver plays Metacontroller.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startNodeScenario } from './support/node-scenario.ts'
import { HAMI_TYPE, REMEMBER_WORKSPACE, hostPathVolume, webInstance, workspaceLog } from './support/node-workloads.ts'
import { apply, createNamespaces, getJson as getJsonOf } from './support/kubectl.ts'
import { importImages } from './support/node-images.ts'
import { driveInstance } from './support/node-drive.ts'
import { condition } from './support/reads.ts'

type Obj = any

const env = await startNodeScenario()
const { cluster, node } = env
const image = (await importImages(node)).node
const NS = 'files'
const NAME = 'notebook'
const CLASS = 'gpuhooks-test-hostpath'
const VOLUME_DIR = join(node.dir, 'workspace-volume')

const getJson = (args: string[]): Promise<Obj> => getJsonOf(cluster, args)
const drive = (what: string, until: (instance: Obj) => boolean): Promise<Obj> =>
  driveInstance(env, { namespace: NS, name: NAME }, what, until)
const patch = (spec: Obj) => cluster.kubectl(['patch', 'instance', NAME, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec })])
const running = (i: Obj): boolean => i.status?.phase === 'Running'

t.before(async () => {
  await createNamespaces(cluster, [NS])
  await apply(cluster, HAMI_TYPE)
  // No provisioner: the binder binds the claim to the volume below. Expansion allowed, so the
  // API server takes a grown request (its PersistentVolumeClaimResize admission plugin).
  await hostPathVolume(cluster, { name: 'workspace-volume', dir: VOLUME_DIR, storageClass: CLASS, storage: '2Gi', expandable: true })
})

t.test('a file written before stop is there after start; a grown size updates the claim in place', async (t) => {
  await apply(
    cluster,
    webInstance(NS, NAME, image, {
      command: ['node', '-e', REMEMBER_WORKSPACE],
      env: [],
      resources: { accelerator: { count: 0 } },
      workspace: { persistent: { size: '1Gi', storageClassName: CLASS } }
    })
  )
  const first = await drive('Running with its claim Bound', (i) => running(i) && i.status.workspace?.phase === 'Bound')
  const claim = await getJson(['pvc', `${NAME}-workspace`, '-n', NS])

  await t.test('the claim is the Instance’s, bound by the binder, and the Pod mounts it', async (t) => {
    t.match(claim, {
      metadata: { labels: { 'app.kubernetes.io/part-of': NAME, 'app.kubernetes.io/managed-by': 'gpuhooks' } },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        storageClassName: CLASS,
        volumeName: 'workspace-volume'
      }
    })
    const owner = (claim.metadata.ownerReferences as Obj[]).find((o) => o.controller === true)
    t.match(owner, { kind: 'Instance', name: NAME, uid: first.metadata.uid }, 'owned by the Instance')
    t.same(first.status.workspace, {
      claimName: `${NAME}-workspace`,
      phase: 'Bound',
      capacity: '2Gi',
      requested: '1Gi',
      storageClassName: CLASS
    })
    const pod = await getJson(['pod', NAME, '-n', NS])
    t.same(
      (pod.spec.volumes as Obj[]).find((v) => v.name === 'workspace'),
      { name: 'workspace', persistentVolumeClaim: { claimName: `${NAME}-workspace` } }
    )
  })

  const firstLog = await workspaceLog(VOLUME_DIR, 1)
  const marker = readFileSync(join(VOLUME_DIR, 'marker'), 'utf8')
  t.same(firstLog, ['found nothing'], 'the first run found an empty workspace and wrote the marker')

  await t.test('stopped: the Pod goes, the claim and the Service stay', async (t) => {
    await patch({ stop: true })
    const stopped = await drive('Stopped', (i) => i.status?.phase === 'Stopped')
    const pods = await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])
    t.equal(pods.stdout.trim(), '', 'no Pod')
    const kept = await getJson(['pvc', `${NAME}-workspace`, '-n', NS])
    t.equal(kept.metadata.uid, claim.metadata.uid, 'the same claim')
    t.equal(kept.status.phase, 'Bound')
    t.ok((await getJson(['service', NAME, '-n', NS])).metadata.uid, 'the Service stays')
    t.equal(stopped.status.workspace.phase, 'Bound')
  })

  await t.test('a grown size updates the claim in place while stopped', async (t) => {
    await patch({ workspace: { persistent: { size: '2Gi', storageClassName: CLASS } } })
    await drive('its claim asking 2Gi', (i) => i.status?.workspace?.requested === '2Gi')
    const grown = await getJson(['pvc', `${NAME}-workspace`, '-n', NS])
    t.equal(grown.metadata.uid, claim.metadata.uid, 'updated, not replaced')
    t.equal(grown.spec.resources.requests.storage, '2Gi')
    t.equal(grown.spec.volumeName, 'workspace-volume', 'still bound to the same volume')
  })

  await t.test('a shrink is refused at admission, naming the field', async (t) => {
    const { code, stderr } = await cluster.kubectl(
      ['patch', 'instance', NAME, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { workspace: { persistent: { size: '1Gi' } } } })],
      { allowFail: true }
    )
    t.equal(code, 1)
    t.match(stderr, /spec\.workspace\.persistent\.size may only grow/)
  })

  await t.test('started again, the new Pod finds the file', async (t) => {
    await patch({ stop: false })
    const again = await drive('Running again', (i) => running(i))
    t.equal(condition(again, 'Ready')?.status, 'True')
    t.same(await workspaceLog(VOLUME_DIR, 2), ['found nothing', `found ${marker}`], 'the second run found the marker of the first')
  })
})

t.test('the node leaves nothing on the machine', async (t) => {
  t.same(await node.stop(), [], 'every step of the stop succeeded')
  t.same(await node.leftovers(), [], 'no link, netns, iptables chain, ipset, mount or cgroup of the node is left')
})
