/**
 * A running Instance as its sync request shows it on a resync: the children are the hook's own
 * answer, stored the way the API server stores them (defaults, node ports, kubelet's status), and
 * the parent's status is what the previous sync wrote. Built from the hook instead of written by
 * hand, so the request follows whatever the hook renders today.
 *
 * Also the cluster objects other payloads share: Settings, Namespaces, controller objects.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { parseAllDocuments } from 'yaml'
import { WORKER_API_VERSION } from '../../hooks/api/instance.ts'
import { INSTANCE_TYPE_TYPE_KEY } from '../../hooks/api/instancetype.ts'
import { DEFAULT_SSH_SERVER_IMAGE, SETTING_API_VERSION, SETTING_TYPE_KEY, SSH_SERVER_IMAGE_SETTING } from '../../hooks/api/setting.ts'
import {
  NAMESPACE_KEY,
  POD_KEY,
  RUNTIME_CLASS_KEY,
  SECRET_KEY,
  SERVICE_KEY,
  type InstanceSyncRequest
} from '../../hooks/instance/request.ts'
import { sync as instanceSync } from '../../hooks/instance/sync.ts'
import { isRecord, type KubeObject } from '../../hooks/k8s/objects.ts'
import { objectKey, typeKey } from '../../hooks/metacontroller/observed.ts'
import { applied, CREATED, STARTED, storedChild, type Owner } from './stored.ts'

const INSTANCE_CONTROLLER = 'gpuhooks-instance'
/** The clock of the syncs that settle a running Instance; the benchmark's own requests use the real one. */
const SETTLED = new Date('2026-01-05T09:01:00Z')

/** The controller object Metacontroller sends along, from this repository's manifest. */
export function controllerObject(file: string, kind: string): KubeObject {
  const docs = parseAllDocuments(readFileSync(new URL(`../../metacontroller/${file}`, import.meta.url), 'utf8'))
  const found = docs.map((d) => d.toJS() as unknown).find((o): o is KubeObject => isRecord(o) && o.kind === kind)
  if (found === undefined) throw new Error(`metacontroller/${file} has no ${kind}`)
  return applied(found, 900)
}

const hex = (seed: string): string => createHash('sha256').update(seed).digest('hex')

/** The spec of the benchmark's Instance: SSH and four ports, with the usual extras. */
function instanceSpec(): Record<string, unknown> {
  return {
    type: 'a100',
    image: 'nvcr.io/nvidia/pytorch:24.05-py3',
    command: ['jupyter', 'lab'],
    args: ['--ip=0.0.0.0', '--no-browser', '--ServerApp.token='],
    env: [
      { name: 'HF_HOME', value: '/workspace/.cache/huggingface' },
      { name: 'OMP_NUM_THREADS', value: '8' },
      { name: 'WANDB_API_KEY', valueFrom: { secretKeyRef: { name: 'wandb', key: 'api-key' } } }
    ],
    ports: [
      { port: 8888, name: 'jupyter' },
      { port: 6006, name: 'tensorboard' },
      { port: 8000, name: 'api' },
      { port: 9000, protocol: 'UDP', name: 'telemetry' }
    ],
    resources: { cpu: '8', memory: '64Gi', accelerator: { family: 'Whole', count: 1 } },
    sshPublicKey: { name: 'ssh-keys' },
    workspace: { size: '200Gi' }
  }
}

/** The Instance as stored: applied with kubectl, its status written by Metacontroller. */
function storedInstance(name: string, namespace: string, seed: number, status?: Record<string, unknown>): InstanceSyncRequest['parent'] {
  const object: KubeObject = {
    apiVersion: WORKER_API_VERSION,
    kind: 'Instance',
    metadata: {
      name,
      namespace,
      generation: 3,
      labels: { 'team.example.com/name': 'vision', 'app.kubernetes.io/name': 'notebook' },
      finalizers: [`metacontroller.io/compositecontroller-${INSTANCE_CONTROLLER}`]
    },
    spec: instanceSpec()
  }
  const writers =
    status === undefined ? [] : [{ manager: 'metacontroller', fields: { status }, subresource: 'status' as const, time: STARTED }]
  return { ...applied(object, seed, writers), ...(status !== undefined ? { status } : {}) } as InstanceSyncRequest['parent']
}

function instanceTypeObject(): KubeObject {
  return applied(
    {
      apiVersion: WORKER_API_VERSION,
      kind: 'InstanceType',
      metadata: { name: 'a100' },
      spec: {
        devicePlugin: 'HAMi',
        resourceName: 'nvidia.com/gpu',
        families: ['Whole', 'Shared', 'Sliced'],
        maxCount: 8,
        nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' },
        tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
        runtimeClassName: 'nvidia',
        defaults: { cpu: '4', memory: '32Gi' }
      }
    },
    901
  )
}

export function setting(name: string, value: string, seed: number): KubeObject {
  return applied({ apiVersion: SETTING_API_VERSION, kind: 'Setting', metadata: { name }, value }, seed)
}

export function namespaceObject(name: string, seed: number): KubeObject {
  return applied(
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name,
        labels: {
          'kubernetes.io/metadata.name': name,
          'pod-security.kubernetes.io/enforce': 'privileged',
          'team.example.com/name': 'vision'
        }
      },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' }
    },
    seed
  )
}

function keySecret(namespace: string): KubeObject {
  const keys = ['alice@laptop', 'alice@desktop', 'ci@runner'].map(
    (who) => `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${hex(who).slice(0, 43)} ${who}`
  )
  return applied(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'ssh-keys', namespace },
      type: 'Opaque',
      data: { authorized_keys: Buffer.from(`${keys.join('\n')}\n`).toString('base64') }
    },
    902
  )
}

/** The hook's Pod as the API server defaults it and kubelet reports it running. */
function runningPod(desired: KubeObject, owner: Owner, seed: number): KubeObject {
  const spec = desired.spec as Record<string, unknown>
  const containers = (spec.containers as Array<Record<string, unknown>>).map((c): Record<string, unknown> => ({
    ...c,
    imagePullPolicy: c.imagePullPolicy ?? 'IfNotPresent',
    resources: c.resources ?? {},
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File'
  }))
  const node = 'gpu-a100-07'
  const tolerations = [
    ...((spec.tolerations as unknown[] | undefined) ?? []),
    { effect: 'NoExecute', key: 'node.kubernetes.io/not-ready', operator: 'Exists', tolerationSeconds: 300 },
    { effect: 'NoExecute', key: 'node.kubernetes.io/unreachable', operator: 'Exists', tolerationSeconds: 300 }
  ]
  const status = {
    conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
      lastProbeTime: null,
      lastTransitionTime: type === 'PodScheduled' ? CREATED : STARTED,
      status: 'True',
      type
    })),
    containerStatuses: containers.map((c) => ({
      containerID: `containerd://${hex(`${seed}/${String(c.name)}`)}`,
      image: c.image,
      imageID: `${String(c.image).split(':')[0]}@sha256:${hex(String(c.image))}`,
      lastState: {},
      name: c.name,
      ready: true,
      restartCount: 0,
      started: true,
      state: { running: { startedAt: STARTED } }
    })),
    hostIP: '192.0.2.7',
    hostIPs: [{ ip: '192.0.2.7' }],
    phase: 'Running',
    podIP: '10.244.3.17',
    podIPs: [{ ip: '10.244.3.17' }],
    qosClass: 'Burstable',
    startTime: CREATED
  }
  return storedChild(desired, owner, {
    seed,
    marks: { labels: { 'controller-uid': owner.uid } },
    spec: {
      ...spec,
      containers,
      dnsPolicy: 'ClusterFirst',
      nodeName: node,
      preemptionPolicy: 'PreemptLowerPriority',
      priority: 0,
      schedulerName: 'default-scheduler',
      securityContext: {},
      serviceAccount: 'default',
      serviceAccountName: 'default',
      terminationGracePeriodSeconds: 30,
      tolerations
    },
    status,
    statusManager: 'kubelet'
  })
}

/** The hook's Service as the API server stores it: cluster IP and a node port per port. */
function allocatedService(desired: KubeObject, owner: Owner, seed: number): KubeObject {
  const spec = desired.spec as Record<string, unknown>
  const ports = (spec.ports as Array<Record<string, unknown>>).map((p, i) => ({ ...p, nodePort: 30000 + ((seed * 7 + i) % 2768) }))
  return storedChild(desired, owner, {
    seed: seed + 1,
    marks: { labels: { 'controller-uid': owner.uid } },
    spec: {
      ...spec,
      ports,
      clusterIP: '10.96.12.34',
      clusterIPs: ['10.96.12.34'],
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack'
    },
    status: { loadBalancer: {} }
  })
}

function byType(objects: readonly KubeObject[], types: readonly string[]): Record<string, Record<string, KubeObject>> {
  const out: Record<string, Record<string, KubeObject>> = Object.fromEntries(types.map((t) => [t, {}]))
  for (const o of objects) {
    const map = (out[typeKey(String(o.apiVersion), String(o.kind))] ??= {})
    map[objectKey(String(o.metadata.name), o.metadata.namespace)] = o
  }
  return out
}

function instanceRequest(parent: InstanceSyncRequest['parent'], children: KubeObject[], related: KubeObject[]): InstanceSyncRequest {
  const services = children.filter((c) => c.kind === 'Service')
  return {
    controller: controllerObject('instance.yaml', 'CompositeController'),
    parent,
    children: byType(children, [POD_KEY, SERVICE_KEY]),
    related: byType(
      [...related, ...services],
      [INSTANCE_TYPE_TYPE_KEY, SETTING_TYPE_KEY, NAMESPACE_KEY, SERVICE_KEY, SECRET_KEY, RUNTIME_CLASS_KEY]
    ),
    finalizing: false
  }
}

/**
 * The sync request of a running Instance with SSH and four ports: its running Pod and its
 * Service with node ports, the InstanceType, the SSH image Setting, the Namespace and the key
 * Secret; the status is what the previous sync wrote.
 */
export function runningInstanceRequest(name = 'ws', namespace = 'team-a', seed = 1): InstanceSyncRequest {
  const runtimeClass = applied({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'nvidia' }, handler: 'nvidia' }, 905)
  const related = [
    instanceTypeObject(),
    setting(SSH_SERVER_IMAGE_SETTING, DEFAULT_SSH_SERVER_IMAGE, 903),
    namespaceObject(namespace, 904),
    keySecret(namespace),
    runtimeClass
  ]
  const fresh = storedInstance(name, namespace, seed)
  const owner: Owner = { apiVersion: WORKER_API_VERSION, kind: 'Instance', name, uid: String(fresh.metadata.uid) }
  const desired = instanceSync(instanceRequest(fresh, [], related), SETTLED).children as KubeObject[]
  const children = desired.map((c) => (c.kind === 'Pod' ? runningPod(c, owner, seed * 10) : allocatedService(c, owner, seed * 10)))
  // The status the last sync wrote, so that this request is a no-op resync.
  const { status } = instanceSync(instanceRequest(fresh, children, related), SETTLED)
  return instanceRequest(storedInstance(name, namespace, seed, status), children, related)
}
