/**
 * The Instance Pod the hook renders, started by a real runtime from the rendered object itself:
 * `podman kube play` of the Pod answered by the sync hook (workspace image, SSH sidecar image from
 * the Setting). One substitution: the key Secret's volume becomes a hostPath of a directory laid
 * out as the kubelet lays out a Secret volume, because podman 4.3.1's kube play crashes on any
 * `secret` volume (a nil secrets manager in VolumeFromSecret). Everything else is the rendered
 * Pod: containers, order, securityContext, shareProcessNamespace, mounts.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import type { PodSpec } from 'kubernetes-types/core/v1.d.ts'
import { OWNER_LABEL, addressOf, hostPid, inspect, removeContainers, waitForLog } from './support/containers.ts'
import { buildImages } from './support/images.ts'
import { renderInstancePod } from './support/instance-pod.ts'
import { TEST_NETWORK, assertOnBridge, ensureNetwork, podman } from './support/podman.ts'
import { secretVolume } from './support/secret-volume.ts'
import { clientOptions, newKey, privilegeOf, runClient, unprivileged } from './support/ssh-client.ts'
import { buildWorkspaceImages } from './support/workspace.ts'

const refs = await buildImages()
const workspace = await buildWorkspaceImages(refs.debian)
await removeContainers()
t.teardown(removeContainers)
const network = await ensureNetwork()
const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-kube-play-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const key = await newKey(dir, 'key')

const name = `kube-play-${process.pid}`
const rendered = renderInstancePod({
  name,
  image: workspace.user,
  command: ['/bin/sh', '-c', 'exec sleep infinity'],
  sshdImage: refs.sshd,
  authorizedKeys: key.line
})
const pod = structuredClone(rendered) as typeof rendered & { spec: PodSpec }
for (const volume of pod.spec.volumes ?? []) {
  if (volume.secret === undefined) continue
  const written = secretVolume(volume, join(dir, volume.name), { authorized_keys: key.line })
  delete volume.secret
  volume.hostPath = { path: written.dir, type: 'Directory' }
}
pod.metadata.labels = { ...pod.metadata.labels, [OWNER_LABEL]: String(process.pid) }
const file = join(dir, 'pod.yaml')
writeFileSync(file, stringify(pod))

const started = Date.now()
await podman(['kube', 'play', `--network=${network}`, file])
t.teardown(() => podman(['kube', 'down', file]).catch(() => undefined))
await waitForLog(`${name}-sshd`, /Server listening on/)
const playedMs = Date.now() - started
const infra = (await podman(['pod', 'inspect', '--format', '{{.InfraContainerID}}', name])).trim()
const address = await addressOf(infra, TEST_NETWORK)
await assertOnBridge(address)

t.test('kube play starts the rendered Pod: main, then sshd with the rendered capabilities, sharing the PID namespace', async (t) => {
  t.same((await inspect(`${name}-main`)).State.Status, 'running')
  const sshd = await inspect(`${name}-sshd`)
  t.equal(sshd.State.Status, 'running')
  const added = pod.spec.containers.find((c) => c.name === 'sshd')?.securityContext?.capabilities?.add ?? []
  t.same([...(sshd.EffectiveCaps as string[])].sort(), added.map((c) => `CAP_${c}`).sort(), 'exactly the capabilities the hook adds')
  t.match(await podman(['pod', 'inspect', '--format', '{{.SharedNamespaces}}', name]), /\bpid\b/)
  t.comment(`podman kube play to sshd listening: ${playedMs} ms`)
})

t.test('an SSH login lands in main, as its user, with no capability', async (t) => {
  const main = await hostPid(`${name}-main`)
  const ran = await runClient('ssh', [
    ...clientOptions(key),
    `root@${address}`,
    'hostname; readlink /proc/self/ns/mnt; cat /proc/self/status'
  ])
  t.equal(ran.code, 0, ran.stderr)
  t.match(ran.stdout, `${name}\n${readlinkSync(`/proc/${main}/ns/mnt`)}\n`)
  t.same(privilegeOf(ran.stdout), unprivileged(1000))
  t.match(readFileSync(`/proc/${main}/status`, 'utf8'), /^Uid:\s+1000\s/m, 'main runs as the image’s user')
})
