import t from 'tap'
import { fileURLToPath } from 'node:url'
import { buildPod, podHash, type PodInput } from '../../hooks/instance/pod.ts'
import { withDefaults } from '../../hooks/instance/validate.ts'
import { POD_HASH_ANNOTATION } from '../../hooks/instance/labels.ts'
import type { InstanceSpec } from '../../hooks/api/instance.ts'
import type { InstanceTypeSpec } from '../../hooks/api/instancetype.ts'
import { contentHash } from '../../hooks/k8s/hash.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { reversedKeys } from '../support/fields.ts'

/** Snapshots live beside the tests and are reviewed like code (`npm run snap -- <file>` rewrites them). */
const SNAPSHOT_FILE = fileURLToPath(new URL('./snapshots/instance-pod.test.cjs', import.meta.url))

const cpuType: InstanceTypeSpec = { defaults: { cpu: '2', memory: '8Gi' } }
const a100: InstanceTypeSpec = {
  devicePlugin: 'HAMi',
  families: ['Whole'],
  nodeSelector: { 'gpu.example.com/model': 'a100', accelerator: 'nvidia' },
  tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
  runtimeClassName: 'nvidia',
  defaults: { cpu: '4', memory: '32Gi' }
}

function input(spec: InstanceSpec, type: InstanceTypeSpec = cpuType, more: Partial<PodInput> = {}): PodInput {
  return {
    name: 'nb',
    namespace: 'team-a',
    generation: 3,
    spec: withDefaults(spec),
    typeName: spec.type,
    type,
    sshImage: undefined,
    ...more
  }
}

/** The Pod without its hash, and the hash. */
function split(pod: KubeObject): { pod: KubeObject; hash: string | undefined } {
  const copy = structuredClone(pod)
  const annotations = copy.metadata.annotations ?? {}
  const hash = annotations[POD_HASH_ANNOTATION]
  delete annotations[POD_HASH_ANNOTATION]
  return { pod: copy, hash }
}

const labels = (type: string): Record<string, string> => ({
  'app.kubernetes.io/part-of': 'nb',
  'app.kubernetes.io/managed-by': 'gpuhooks',
  'resource.gpustack.ai/type': 'instances',
  'worker.gpustack.ai/instance-type': type
})

t.test('a CPU-only Instance renders main with the type defaults and an ephemeral workspace', async (t) => {
  const got = split(buildPod(input({ type: 'cpu', image: 'jupyter:1' })))
  t.strictSame(got.pod, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'nb', namespace: 'team-a', labels: labels('cpu'), annotations: { 'worker.gpustack.ai/instance-generation': '3' } },
    spec: {
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'main',
          image: 'jupyter:1',
          imagePullPolicy: 'IfNotPresent',
          resources: { limits: { cpu: '2', memory: '8Gi' }, requests: { cpu: '2', memory: '8Gi' } },
          volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }]
        }
      ],
      enableServiceLinks: false,
      restartPolicy: 'Always',
      volumes: [{ name: 'workspace', emptyDir: {} }]
    }
  })
})

t.test('a GPU Instance carries everything the spec and the type say', async (t) => {
  // The fields main carries exactly as the spec gives them.
  const verbatim: Pick<InstanceSpec, 'image' | 'imagePullPolicy' | 'command' | 'args' | 'env'> = {
    image: 'pytorch:2',
    imagePullPolicy: 'Always',
    command: ['python'],
    args: ['-m', 'http.server'],
    env: [
      { name: 'MODE', value: 'dev' },
      { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }
    ]
  }
  const spec: InstanceSpec = {
    type: 'a100',
    ...verbatim,
    imagePullSecrets: [{ name: 'registry' }],
    ports: [
      { port: 8888, name: 'jupyter' },
      { port: 9000, protocol: 'UDP' }
    ],
    resources: { cpu: 8, memory: '64Gi', accelerator: { count: 2 } },
    workspace: { mountPath: '/home/work', claimName: 'nb-data' },
    nodeName: 'gpu-node-7'
  }
  const got = split(buildPod(input(spec, a100)))
  const amounts = { cpu: '8', memory: '64Gi', 'nvidia.com/gpu': '2', 'nvidia.com/gpucores': '100', 'nvidia.com/gpumem-percentage': '100' }
  t.strictSame(got.pod.spec, {
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-node-7'] }] }]
        }
      }
    },
    automountServiceAccountToken: false,
    containers: [
      {
        name: 'main',
        ...verbatim,
        ports: [
          { containerPort: 8888, name: 'jupyter', protocol: 'TCP' },
          { containerPort: 9000, protocol: 'UDP' }
        ],
        resources: { limits: amounts, requests: amounts },
        volumeMounts: [{ name: 'workspace', mountPath: '/home/work' }]
      }
    ],
    enableServiceLinks: false,
    imagePullSecrets: [{ name: 'registry' }],
    nodeSelector: { accelerator: 'nvidia', 'gpu.example.com/model': 'a100' },
    restartPolicy: 'Always',
    runtimeClassName: 'nvidia',
    tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: 'nb-data' } }]
  })
})

const cases: Array<{ name: string; given: PodInput; expected: unknown; pick: (pod: KubeObject) => unknown }> = [
  {
    name: 'the Pod carries the four labels and records the generation',
    given: input({ type: 'cpu', image: 'x' }, cpuType, { generation: 12 }),
    pick: (pod) => [pod.metadata.labels, pod.metadata.annotations?.['worker.gpustack.ai/instance-generation']],
    expected: [labels('cpu'), '12']
  },
  {
    name: 'the Instance cpu and memory win over the type defaults, requests = limits',
    given: input({ type: 'cpu', image: 'x', resources: { cpu: '500m', memory: '1Gi' } }),
    pick: (pod) => mainOf(pod).resources,
    expected: { limits: { cpu: '500m', memory: '1Gi' }, requests: { cpu: '500m', memory: '1Gi' } }
  },
  {
    name: 'the type default fills only what the Instance leaves out',
    given: input({ type: 'cpu', image: 'x', resources: { memory: '1Gi' } }),
    pick: (pod) => mainOf(pod).resources,
    expected: { limits: { cpu: '2', memory: '1Gi' }, requests: { cpu: '2', memory: '1Gi' } }
  },
  {
    name: 'no cpu or memory anywhere leaves resources out',
    given: input({ type: 'bare', image: 'x' }, {}),
    pick: (pod) => mainOf(pod).resources,
    expected: undefined
  },
  {
    name: 'accelerator resources go in requests and limits of main',
    given: input(
      { type: 'g', image: 'x', resources: { accelerator: { family: 'Shared', count: 2 } } },
      { devicePlugin: 'GPUStack', families: ['Shared'] }
    ),
    pick: (pod) => mainOf(pod).resources,
    expected: { limits: { 'nvidia.com/gpu.shared': '2' }, requests: { 'nvidia.com/gpu.shared': '2' } }
  },
  {
    name: 'count 0 renders a CPU-only main',
    given: input({ type: 'g', image: 'x', resources: { accelerator: { count: 0 } } }, { devicePlugin: 'HAMi' }),
    pick: (pod) => mainOf(pod).resources,
    expected: undefined
  },
  {
    name: 'a workspace size limits the emptyDir, mounted at the mountPath',
    given: input({ type: 'cpu', image: 'x', workspace: { size: '20Gi', mountPath: '/data' } }),
    pick: (pod) => [(pod.spec as { volumes: unknown[] }).volumes, mainOf(pod).volumeMounts],
    expected: [[{ name: 'workspace', emptyDir: { sizeLimit: '20Gi' } }], [{ name: 'workspace', mountPath: '/data' }]]
  },
  {
    name: 'spec.nodeName never becomes pod.spec.nodeName',
    given: input({ type: 'cpu', image: 'x', nodeName: 'n1' }),
    pick: (pod) => (pod.spec as Record<string, unknown>).nodeName,
    expected: undefined
  },
  {
    name: 'container ports are named by the entry name only when given',
    given: input({ type: 'cpu', image: 'x', ports: [{ port: 80 }, { port: 443, name: 'https' }] }),
    pick: (pod) => mainOf(pod).ports,
    expected: [
      { containerPort: 80, protocol: 'TCP' },
      { containerPort: 443, name: 'https', protocol: 'TCP' }
    ]
  },
  {
    name: 'without SSH, 22/TCP is an ordinary port of main',
    given: input({ type: 'cpu', image: 'x', ports: [{ port: 22 }] }),
    pick: (pod) => mainOf(pod).ports,
    expected: [{ containerPort: 22, protocol: 'TCP' }]
  }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    t.strictSame(c.pick(buildPod(c.given)), c.expected)
  })
}

t.test('the rendered bytes do not depend on the key order of the spec or the InstanceType', async (t) => {
  const given = input(
    { type: 'a100', image: 'x', ports: [{ port: 80 }], resources: { accelerator: { count: 1 } }, sshPublicKey: { name: 'k' } },
    a100,
    { sshImage: 'sshd:1' }
  )
  const reordered = reversedKeys(given)
  // Tolerations are copied as the InstanceType gives them (see the next test).
  reordered.type.tolerations = given.type.tolerations
  t.not(JSON.stringify(reordered), JSON.stringify(given), 'the two inputs differ in key order')
  t.equal(JSON.stringify(buildPod(reordered)), JSON.stringify(buildPod(given)))
})

t.test("the rendered bytes do not depend on the key order of the InstanceType's tolerations", async (t) => {
  const given = input({ type: 'a100', image: 'x', resources: { accelerator: { count: 1 } } }, a100)
  t.equal(JSON.stringify(buildPod(reversedKeys(given))), JSON.stringify(buildPod(given)))
})

t.test('the rendered bytes of a GPU Instance with SSH and ports are the reviewed ones', async (t) => {
  t.snapshotFile = SNAPSHOT_FILE
  const given = input(
    { type: 'a100', image: 'x', ports: [{ port: 80 }], resources: { accelerator: { count: 1 } }, sshPublicKey: { name: 'k' } },
    a100,
    { sshImage: 'sshd:1' }
  )
  t.matchSnapshot(JSON.stringify(buildPod(given), null, 2))
})

t.test('the pod-hash is the content hash of the Pod without it', async (t) => {
  const pod = buildPod(input({ type: 'cpu', image: 'x' }))
  const { pod: bare, hash } = split(pod)
  t.match(hash, /^[0-9a-f]{10}$/)
  t.equal(hash, contentHash(bare))
  t.equal(podHash(pod), hash, 'podHash ignores the recorded hash')
})

t.test('the pod-hash changes when the InstanceType changes', async (t) => {
  const spec: InstanceSpec = { type: 'a100', image: 'x', resources: { accelerator: { count: 1 } } }
  const before = split(buildPod(input(spec, a100))).hash
  const retainted = { ...a100, tolerations: [{ key: 'dedicated', operator: 'Equal' as const, value: 'ml', effect: 'NoSchedule' as const }] }
  t.not(split(buildPod(input(spec, retainted))).hash, before, 'new tolerations')
  t.not(split(buildPod(input(spec, { ...a100, devicePlugin: 'GPUStack' }))).hash, before, 'another device plugin')
  t.not(split(buildPod(input(spec, { ...a100, defaults: { cpu: '16', memory: '32Gi' } }))).hash, before, 'new defaults')
  t.equal(split(buildPod(input(spec, { ...a100, maxCount: 8 }))).hash, before, 'a type field the Pod does not use changes nothing')
})

t.test('the pod-hash changes when the SSH image changes', async (t) => {
  const spec: InstanceSpec = { type: 'cpu', image: 'x', sshPublicKey: { name: 'k' } }
  t.not(
    split(buildPod(input(spec, cpuType, { sshImage: 'sshd:1' }))).hash,
    split(buildPod(input(spec, cpuType, { sshImage: 'sshd:2' }))).hash
  )
})

function mainOf(pod: KubeObject): Record<string, unknown> & { resources?: unknown; ports?: unknown; volumeMounts?: unknown } {
  const containers = (pod.spec as { containers: Array<Record<string, unknown>> }).containers
  const main = containers.find((c) => c.name === 'main')
  if (main === undefined) throw new Error('no main container')
  return main
}
