import t from 'tap'
import { podSecurityForbidsSSH, sshSidecar, type SshSidecarInput } from '../../hooks/instance/ssh.ts'
import { buildPod, type PodInput } from '../../hooks/instance/pod.ts'
import type { SpecProblem } from '../../hooks/instance/problems.ts'
import { withDefaults } from '../../hooks/instance/validate.ts'
import type { InstanceSpec } from '../../hooks/api/instance.ts'
import type { InstanceTypeSpec } from '../../hooks/api/instancetype.ts'
import { DEFAULT_SSH_SERVER_IMAGE } from '../../hooks/api/setting.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'

const securityContext = {
  allowPrivilegeEscalation: true,
  capabilities: {
    add: ['SYS_ADMIN', 'SYS_PTRACE', 'SYS_CHROOT', 'SETUID', 'SETGID', 'SETPCAP', 'NET_BIND_SERVICE', 'AUDIT_WRITE'],
    drop: ['ALL']
  },
  privileged: false
}
const volumes = [
  {
    name: 'ssh-authorized-keys',
    secret: { secretName: 'nb-keys', items: [{ key: 'authorized_keys', path: 'authorized_keys', mode: 256 }] }
  },
  { name: 'ssh-host-keys', emptyDir: {} }
]
const volumeMounts = [
  { name: 'ssh-authorized-keys', mountPath: '/etc/ssh/gpuhooks', readOnly: true },
  { name: 'ssh-host-keys', mountPath: '/var/lib/gpuhooks-sshd' }
]

const sidecarCases: Array<{ name: string; given: SshSidecarInput; expected: ReturnType<typeof sshSidecar> }> = [
  {
    name: 'the sidecar asks for small cpu and memory, no limit, and no accelerator',
    given: { image: 'sshd:1', secretName: 'nb-keys', visibility: {} },
    expected: {
      container: {
        name: 'sshd',
        image: 'sshd:1',
        ports: [{ name: 'ssh', containerPort: 22, protocol: 'TCP' }],
        resources: { requests: { cpu: '50m', memory: '64Mi' } },
        securityContext,
        volumeMounts
      },
      volumes
    }
  },
  {
    name: 'a visibility resource goes in requests and limits alike, and memory stays unlimited',
    given: { image: 'sshd:1', secretName: 'nb-keys', visibility: { 'device.gpustack.ai/nvidia.visibility': '2' } },
    expected: {
      container: {
        name: 'sshd',
        image: 'sshd:1',
        ports: [{ name: 'ssh', containerPort: 22, protocol: 'TCP' }],
        resources: {
          limits: { 'device.gpustack.ai/nvidia.visibility': '2' },
          requests: { cpu: '50m', memory: '64Mi', 'device.gpustack.ai/nvidia.visibility': '2' }
        },
        securityContext,
        volumeMounts
      },
      volumes
    }
  }
]

for (const c of sidecarCases) {
  t.test(c.name, async (t) => {
    t.strictSame(sshSidecar(c.given), c.expected)
  })
}

t.test('the key Secret is mounted as a directory so key rotation is seen', async (t) => {
  const {
    container,
    volumes: [volume]
  } = sshSidecar({ image: 'sshd:1', secretName: 'nb-keys', visibility: {} })
  const mount = container.volumeMounts?.[0]
  t.strictSame(mount, { name: 'ssh-authorized-keys', mountPath: '/etc/ssh/gpuhooks', readOnly: true })
  t.equal(mount?.subPath, undefined, 'a subPath mount would never see a rotated key')
  t.strictSame(volume?.secret?.items, [{ key: 'authorized_keys', path: 'authorized_keys', mode: 0o400 }])
})

const gpustack: InstanceTypeSpec = { devicePlugin: 'GPUStack', families: ['Whole', 'Partitioned'], partitionProfiles: ['1g.10gb'] }
const hami: InstanceTypeSpec = { devicePlugin: 'HAMi', families: ['Whole'] }

function render(spec: InstanceSpec, type: InstanceTypeSpec, sshImage: string | undefined): KubeObject {
  const input: PodInput = { name: 'nb', namespace: 'team-a', generation: 1, spec: withDefaults(spec), typeName: spec.type, type, sshImage }
  return buildPod(input)
}
function containers(pod: KubeObject): Array<{
  name: string
  image?: string
  ports?: unknown
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> }
}> {
  return (pod.spec as { containers: [] }).containers
}

t.test('the SSH sidecar comes after main and shares the process namespace', async (t) => {
  const pod = render({ type: 'g', image: 'x', sshPublicKey: { name: 'nb-keys' } }, hami, 'sshd:1')
  t.strictSame(
    containers(pod).map((c) => c.name),
    ['main', 'sshd']
  )
  t.equal((pod.spec as { shareProcessNamespace?: boolean }).shareProcessNamespace, true)
  t.strictSame((pod.spec as { volumes: unknown[] }).volumes, [{ name: 'workspace', emptyDir: {} }, ...volumes])
})

t.test('without SSH there is no sidecar and no shared process namespace', async (t) => {
  const pod = render({ type: 'g', image: 'x' }, hami, undefined)
  t.strictSame(
    containers(pod).map((c) => c.name),
    ['main']
  )
  t.equal((pod.spec as { shareProcessNamespace?: boolean }).shareProcessNamespace, undefined)
})

t.test('the sidecar image comes from the Setting, else the published default', async (t) => {
  const spec: InstanceSpec = { type: 'g', image: 'x', sshPublicKey: { name: 'k' } }
  t.equal(containers(render(spec, hami, 'registry.local/sshd:7'))[1]?.image, 'registry.local/sshd:7')
  t.equal(containers(render(spec, hami, undefined))[1]?.image, DEFAULT_SSH_SERVER_IMAGE)
})

t.test('22/TCP is declared on sshd, never on main', async (t) => {
  const pod = render({ type: 'g', image: 'x', sshPublicKey: { name: 'k' }, ports: [{ port: 22 }, { port: 8888 }] }, hami, 'sshd:1')
  const [main, sshd] = containers(pod)
  t.strictSame(main?.ports, [{ containerPort: 8888, protocol: 'TCP' }])
  t.strictSame(sshd?.ports, [{ name: 'ssh', containerPort: 22, protocol: 'TCP' }])
})

t.test('the SSH sidecar never takes a second accelerator', async (t) => {
  const rows: Array<{ name: string; type: InstanceTypeSpec; spec: InstanceSpec; sidecar: Record<string, string> }> = [
    {
      name: 'GPUStack: visibility only, count equal to main',
      type: gpustack,
      spec: { type: 'g', image: 'x', sshPublicKey: { name: 'k' }, resources: { accelerator: { count: 3 } } },
      sidecar: { 'device.gpustack.ai/nvidia.visibility': '3' }
    },
    {
      name: 'GPUStack Partitioned: visibility 1',
      type: gpustack,
      spec: {
        type: 'g',
        image: 'x',
        sshPublicKey: { name: 'k' },
        resources: { accelerator: { family: 'Partitioned', profile: '1g.10gb' } }
      },
      sidecar: { 'device.gpustack.ai/nvidia.visibility': '1' }
    },
    {
      name: 'HAMi: nothing',
      type: hami,
      spec: { type: 'g', image: 'x', sshPublicKey: { name: 'k' }, resources: { accelerator: { count: 2 } } },
      sidecar: {}
    },
    { name: 'CPU only: nothing', type: gpustack, spec: { type: 'g', image: 'x', sshPublicKey: { name: 'k' } }, sidecar: {} }
  ]
  for (const row of rows) {
    const [main, sshd] = containers(render(row.spec, row.type, 'sshd:1'))
    const extended = (m: Record<string, string> | undefined): Record<string, string> =>
      Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k.includes('/')))
    t.strictSame(extended(sshd?.resources?.requests), row.sidecar, `${row.name}: requests`)
    t.strictSame(extended(sshd?.resources?.limits), row.sidecar, `${row.name}: limits`)
    for (const name of Object.keys(extended(main?.resources?.requests))) {
      t.notOk(name in (sshd?.resources?.requests ?? {}), `${row.name}: sshd does not request ${name}`)
    }
  }
})

const ns = (labels: Record<string, string> | undefined): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: 'team-a', ...(labels ? { labels } : {}) }
})
const refusal = (level: string): SpecProblem => ({
  field: 'spec.sshPublicKey',
  reason: 'PodSecurityForbidsSSH',
  message:
    `spec.sshPublicKey: namespace team-a enforces Pod Security ${level} (label pod-security.kubernetes.io/enforce), ` +
    'which forbids the SYS_ADMIN and SYS_PTRACE capabilities the SSH sidecar needs; set the label to privileged ' +
    '(kubectl label --overwrite namespace team-a pod-security.kubernetes.io/enforce=privileged) or remove spec.sshPublicKey'
})

const podSecurityCases: Array<{ name: string; given: KubeObject | undefined; expected: SpecProblem | undefined }> = [
  {
    name: 'baseline namespaces refuse the SSH sidecar',
    given: ns({ 'pod-security.kubernetes.io/enforce': 'baseline' }),
    expected: refusal('baseline')
  },
  {
    name: 'restricted namespaces refuse the SSH sidecar',
    given: ns({ 'pod-security.kubernetes.io/enforce': 'restricted' }),
    expected: refusal('restricted')
  },
  {
    name: 'an enforce level Pod Security cannot parse is read as restricted',
    given: ns({ 'pod-security.kubernetes.io/enforce': 'Baseline' }),
    expected: refusal('"Baseline" (read as restricted)')
  },
  {
    name: 'privileged namespaces allow the SSH sidecar',
    given: ns({ 'pod-security.kubernetes.io/enforce': 'privileged' }),
    expected: undefined
  },
  {
    name: 'a namespace without the enforce label allows the SSH sidecar',
    given: ns({ 'pod-security.kubernetes.io/warn': 'restricted' }),
    expected: undefined
  },
  { name: 'an unobserved namespace is no problem', given: undefined, expected: undefined }
]

for (const c of podSecurityCases) {
  t.test(c.name, async (t) => {
    t.strictSame(podSecurityForbidsSSH(c.given), c.expected)
  })
}
