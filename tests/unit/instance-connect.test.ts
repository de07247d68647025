/**
 * `status.connect` (docs/instance.md, "Status"): the address users reach a running Instance at,
 * the SSH command and an endpoint per spec port, through the sync hook with the Setting
 * `instance-access-address` set, unset, blank or malformed.
 */
import t from 'tap'
import { readAccessAddress } from '../../hooks/api/setting.ts'
import { sync } from '../../hooks/instance/sync.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { builtPod, sshRelated } from '../support/instance-requests.ts'
import { NOW, POD_STATUS, baseSpec, instance, observedPod, observedService, request, setting } from './fixtures/instance.ts'

const SETTING = 'instance-access-address'
const webSpec = baseSpec({
  ports: [
    { port: 8888, name: 'jupyter' },
    { port: 53, protocol: 'UDP' }
  ]
})
const sshSpec = baseSpec({
  ports: [
    { port: 8888, name: 'jupyter' },
    { port: 53, protocol: 'UDP' }
  ],
  sshPublicKey: { name: 'keys' }
})
const service = observedService([
  { port: 8888, nodePort: 31001 },
  { port: 53, protocol: 'UDP', nodePort: 31002 }
])
const sshService = observedService([
  { port: 8888, nodePort: 31001 },
  { port: 53, protocol: 'UDP', nodePort: 31002 },
  { port: 22, name: 'ssh', nodePort: 30022 }
])

/** The status of one sync of `spec` with its Pod in `podStatus`, its Service and `settings`. */
function statusOf(
  spec: Record<string, unknown>,
  options: { podStatus?: unknown; settings?: KubeObject[]; service?: KubeObject } = {}
): Record<string, unknown> {
  const ssh = spec.sshPublicKey !== undefined
  const pod = observedPod(builtPod(spec), options.podStatus ?? POD_STATUS.running, { node: 'gpu-1' })
  // The key Secret is related whether or not the spec names it; without SSH nothing reads it.
  const related = sshRelated({ extra: options.settings })
  const children = [pod, options.service ?? (ssh ? sshService : service)]
  return sync(request({ parent: instance(spec), children, related }), NOW).status
}

const endpoints = (host: string) => [
  { name: 'jupyter', port: 8888, protocol: 'TCP', endpoint: `${host}:31001` },
  { name: 'udp-53', port: 53, protocol: 'UDP', endpoint: `${host}:31002` }
]

const rows: Array<{ name: string; status: () => Record<string, unknown>; expected: unknown }> = [
  {
    name: 'Running with SSH: the host IP, the ssh command as root on the ssh node port, and the spec ports (not ssh)',
    status: () => statusOf(sshSpec),
    expected: { address: '192.0.2.7', ssh: 'ssh -p 30022 root@192.0.2.7', ports: endpoints('192.0.2.7') }
  },
  {
    name: 'Running without SSH: no ssh command',
    status: () => statusOf(webSpec),
    expected: { address: '192.0.2.7', ports: endpoints('192.0.2.7') }
  },
  {
    name: 'Running with SSH and no spec ports: the ssh command alone',
    status: () =>
      statusOf(baseSpec({ sshPublicKey: { name: 'keys' } }), { service: observedService([{ port: 22, name: 'ssh', nodePort: 30022 }]) }),
    expected: { address: '192.0.2.7', ssh: 'ssh -p 30022 root@192.0.2.7' }
  },
  {
    name: 'a port without an allocated node port gets no endpoint',
    status: () => statusOf(webSpec, { service: observedService([{ port: 8888 }, { port: 53, protocol: 'UDP', nodePort: 31002 }]) }),
    expected: { address: '192.0.2.7', ports: [endpoints('192.0.2.7')[1]] }
  },
  {
    name: 'the Setting names the address: a DNS name',
    status: () => statusOf(sshSpec, { settings: [setting(SETTING, ' gpu.example.com ')] }),
    expected: { address: 'gpu.example.com', ssh: 'ssh -p 30022 root@gpu.example.com', ports: endpoints('gpu.example.com') }
  },
  {
    name: 'the Setting names the address: an IPv4 address',
    status: () => statusOf(webSpec, { settings: [setting(SETTING, '203.0.113.10')] }),
    expected: { address: '203.0.113.10', ports: endpoints('203.0.113.10') }
  },
  {
    name: 'an IPv6 Setting: bracketed in host:port, bare in the ssh command',
    status: () => statusOf(sshSpec, { settings: [setting(SETTING, '2001:db8::10')] }),
    expected: { address: '2001:db8::10', ssh: 'ssh -p 30022 root@2001:db8::10', ports: endpoints('[2001:db8::10]') }
  },
  {
    name: 'an IPv6 host IP without the Setting: the same forms',
    status: () => statusOf(sshSpec, { podStatus: { ...POD_STATUS.running, hostIP: '2001:db8::7' } }),
    expected: { address: '2001:db8::7', ssh: 'ssh -p 30022 root@2001:db8::7', ports: endpoints('[2001:db8::7]') }
  },
  {
    name: 'a blank Setting means the host IP',
    status: () => statusOf(webSpec, { settings: [setting(SETTING, '   ')] }),
    expected: { address: '192.0.2.7', ports: endpoints('192.0.2.7') }
  },
  {
    name: 'a malformed Setting gives a message and no address, never the host IP in its place',
    status: () => statusOf(sshSpec, { settings: [setting(SETTING, 'gpu.example.com:2222; rm -rf /')] }),
    expected: {
      message:
        'Setting instance-access-address value is neither an IP address nor a lower-case DNS name; an admin must fix the Setting, so no address is given.'
    }
  },
  {
    name: 'a Setting whose value is not a string gives a message',
    status: () => statusOf(webSpec, { settings: [{ ...setting(SETTING, ''), value: { host: 'x' } }] }),
    expected: {
      message:
        'Setting instance-access-address value must be a string, not {"host":"x"}; an admin must fix the Setting, so no address is given.'
    }
  },
  {
    name: 'a host IP that is not an IP address gives no connect (nothing unchecked in a command)',
    status: () => statusOf(sshSpec, { podStatus: { ...POD_STATUS.running, hostIP: '192.0.2.7 -oProxyCommand=x' } }),
    expected: undefined
  },
  {
    name: 'not Running (starting): no connect, even with the Setting',
    status: () => statusOf(sshSpec, { podStatus: POD_STATUS.pulling, settings: [setting(SETTING, 'gpu.example.com')] }),
    expected: undefined
  },
  {
    name: 'stopped: no connect',
    status: () => statusOf(baseSpec({ ...webSpec, stop: true }), { settings: [setting(SETTING, 'gpu.example.com')] }),
    expected: undefined
  }
]
for (const row of rows) {
  t.test(row.name, async (t) => {
    const status = row.status()
    t.strictSame(status.connect, row.expected)
    t.notMatch(JSON.stringify(status.connect ?? {}), /null/)
  })
}

t.test('a malformed Setting leaves the rest of the status alone: Running, the spec valid, accessAddresses given', async (t) => {
  const status = statusOf(webSpec, { settings: [setting(SETTING, 'Not_A_Host')] })
  t.equal(status.phase, 'Running')
  t.strictSame(status.accessAddresses, ['192.0.2.7:31001', '192.0.2.7:31002'])
  const specValid = (status.conditions as Array<{ type: string; status: string }>).find((c) => c.type === 'SpecValid')
  t.equal(specValid?.status, 'True')
})

t.test('an SSH key in the spec of a Pod built without the sidecar gives no ssh command', async (t) => {
  // The Pod was built before sshPublicKey was added; until it is replaced, SSH does not run.
  const pod = observedPod(builtPod(webSpec), POD_STATUS.running, { node: 'gpu-1' })
  const answer = sync(request({ parent: instance(sshSpec), children: [pod, sshService], related: sshRelated() }), NOW)
  t.strictSame(answer.status.connect, { address: '192.0.2.7', ports: endpoints('192.0.2.7') })
})

t.test('the same request gives the same connect (no clock)', async (t) => {
  const a = statusOf(sshSpec, { settings: [setting(SETTING, 'gpu.example.com')] })
  const b = statusOf(sshSpec, { settings: [setting(SETTING, 'gpu.example.com')] })
  t.strictSame(a.connect, b.connect)
})

const values: Array<{ value: unknown; expected: ReturnType<typeof readAccessAddress> }> = [
  { value: undefined, expected: {} },
  { value: '', expected: {} },
  { value: ' 198.51.100.4 ', expected: { address: '198.51.100.4' } },
  { value: 'fd00::1', expected: { address: 'fd00::1' } },
  { value: 'lb-1.gpu.example.com', expected: { address: 'lb-1.gpu.example.com' } },
  { value: 'a'.repeat(63) + '.example.com', expected: { address: 'a'.repeat(63) + '.example.com' } }
]
const refused = [
  '[2001:db8::1]',
  'fe80::1%eth0',
  '::ffff:192.0.2.1',
  '01.2.3.4',
  'GPU.example.com',
  'gpu.example.com.',
  '-gpu.example.com',
  'gpu_1.example.com',
  'a'.repeat(64) + '.example.com',
  ('a'.repeat(60) + '.').repeat(4) + 'abcdefghij',
  'host:2222',
  '1.2.3',
  'gpu example.com'
]
t.test('readAccessAddress takes an IP address or a lower-case DNS name and names what it refuses', async (t) => {
  for (const row of values) t.strictSame(readAccessAddress(row.value), row.expected, String(row.value))
  for (const value of refused) t.match(readAccessAddress(value), { problem: /neither an IP address nor a lower-case DNS name/ }, value)
  t.match(readAccessAddress(7), { problem: /must be a string, not 7/ })
  t.match(readAccessAddress(null), { problem: /must be a string, not null/ })
})

t.test('a port name the spec schema refuses is not carried into status (a spec kept with errors)', async (t) => {
  const bad = baseSpec({ ports: [{ port: 8888, name: 'web; rm -rf /' }] })
  const pod = observedPod(builtPod(webSpec), POD_STATUS.running, { node: 'gpu-1' })
  const answer = sync(request({ parent: instance(bad), children: [pod, service], related: sshRelated() }), NOW)
  t.equal(answer.status.phase, 'Running', 'the Pod is kept')
  t.notMatch(JSON.stringify([answer.status.ports, answer.status.connect]), /rm -rf/)
  t.match(answer.status.connect, { ports: [{ name: 'tcp-8888', endpoint: '192.0.2.7:31001' }] })
})
