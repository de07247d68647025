/**
 * The Pod the Instance hook renders, started in podman as a kubelet would start it: one pod
 * (network, IPC, UTS and, with shareProcessNamespace, PID namespaces shared; podman's pause
 * process as PID 1, as a Pod's is `pause`), then its containers in the Pod's order, each from
 * the rendered container (kube-podman.ts). The key Secret's volume is a host directory laid out
 * as the kubelet's atomic writer lays it out (each file a link through `..data` to a dated
 * directory, swapped in one rename), so replacing the key is what a Secret update does.
 */
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import type { PodSpec } from 'kubernetes-types/core/v1.d.ts'
import { sync } from '../../../hooks/instance/sync.ts'
import type { KubeObject } from '../../../hooks/k8s/objects.ts'
import { SSH_SERVER_IMAGE_SETTING } from '../../../hooks/api/setting.ts'
import { PRIVILEGED } from '../../support/instance-requests.ts'
import { baseSpec, instance, instanceType, namespaceObject, request, secret, setting } from '../../unit/fixtures/instance.ts'
import { OWNED, addressOf, waitForLog } from './containers.ts'
import { containerRun, podFlags } from './kube-podman.ts'
import { secretVolume, type SecretVolume } from './secret-volume.ts'
import { CONTAINERS_DIR, TEST_NETWORK, assertOnBridge, ensureNetwork, podman } from './podman.ts'

/** An Instance with SSH, as the tests give it. */
export interface InstanceInput {
  /** The Instance's name: the Pod's name and hostname. */
  name: string
  /** `spec.image`: the workspace image. */
  image: string
  command?: string[]
  env?: { name: string; value: string }[]
  /** The Setting `instance-ssh-server-image`. */
  sshdImage: string
  /** The key Secret's `authorized_keys`. */
  authorizedKeys: string
}

/** The Pod the sync hook answers for that Instance (in a namespace that enforces `privileged`). */
export function renderInstancePod(input: InstanceInput): KubeObject {
  const spec = baseSpec({
    image: input.image,
    ...(input.command !== undefined ? { command: input.command } : {}),
    ...(input.env !== undefined ? { env: input.env } : {}),
    sshPublicKey: { name: 'keys' }
  })
  const related = [
    instanceType(),
    namespaceObject(PRIVILEGED),
    secret('keys', { authorized_keys: Buffer.from(input.authorizedKeys).toString('base64') }),
    setting(SSH_SERVER_IMAGE_SETTING, input.sshdImage)
  ]
  const answer = sync(request({ parent: instance(spec, { name: input.name }), related }), new Date())
  const pod = answer.children.find((c) => c.kind === 'Pod') as KubeObject | undefined
  if (pod === undefined) throw new Error(`the Instance hook rendered no Pod: ${JSON.stringify(answer.status)}`)
  return pod
}

/** A started Instance Pod. */
export interface StartedPod {
  /** The podman pod's name; its containers are `<name>-<container>`. */
  name: string
  /** The Pod's address on the test network (sshd listens on 22 there). */
  address: string
  rendered: KubeObject
  keys: SecretVolume
  /** The podman container of a container of the Pod. */
  container: (name: string) => string
}

async function imageUser(image: string): Promise<string> {
  return (await podman(['image', 'inspect', '--format', '{{.Config.User}}', image])).trim()
}

/**
 * Starts `rendered` (a Pod the hook answered; its images must be local): the pod, then each
 * container in order, `main` running before `sshd` starts; resolves once sshd listens.
 */
export async function startPod(rendered: KubeObject, authorizedKeys: string): Promise<StartedPod> {
  const spec = rendered.spec as PodSpec
  const podName = String(rendered.metadata.name)
  const namespace = String(rendered.metadata.namespace)
  const name = `gpuhooks-${podName}-${process.pid}`
  const dir = mkdtempSync(join(CONTAINERS_DIR, 'pod-'))
  const volume = (spec.volumes ?? []).find((v) => v.secret !== undefined)
  if (volume === undefined) throw new Error('the rendered Pod has no Secret volume')
  const keys = secretVolume(volume, join(dir, volume.name), { authorized_keys: authorizedKeys })
  const network = await ensureNetwork()
  await podman(['pod', 'create', `--name=${name}`, OWNED, `--network=${network}`, ...podFlags(spec, podName)])
  const container = (c: string): string => `${name}-${c}`
  for (const c of spec.containers) {
    const image = String(c.image)
    const run = containerRun(spec, c.name, {
      podName,
      namespace,
      image,
      imageUser: await imageUser(image),
      volumes: { [volume.name]: keys.dir }
    })
    await podman(['create', `--pod=${name}`, `--name=${container(c.name)}`, OWNED, ...run.flags, run.image, ...run.args])
  }
  for (const c of spec.containers) await podman(['start', container(c.name)])
  await waitForLog(container('sshd'), /Server listening on/)
  const infra = (await podman(['pod', 'inspect', '--format', '{{.InfraContainerID}}', name])).trim()
  const address = await addressOf(infra, TEST_NETWORK)
  await assertOnBridge(address)
  return { name, address, rendered, keys, container }
}
