// Installing the product on a real API server: the CRDs become Established and structural,
// `kubectl explain` teaches the API from their descriptions, every example under deploy/examples
// is really created, every CEL rule refuses a bad object with its own message, and an Instance
// status with every field reads back as written (docs/api.md; docs/testing.md section 3).
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { sync } from '../../hooks/instance/sync.ts'
import { parsePodCidrs } from '../../hooks/isolation/cidrs.ts'
import { readAccessAddress } from '../../hooks/api/setting.ts'
import { PERSISTENT_CLASS_MESSAGE, PERSISTENT_REMOVED_MESSAGE, PERSISTENT_SHRINK_MESSAGE } from '../../hooks/api/instance.ts'
import * as fixtures from '../unit/fixtures/instance.ts'
import { isObject, type Json, type JsonObject } from '../support/merge.ts'
import { startScenario } from './support/scenario.ts'
import { celMessages, documents, objectAt } from './support/manifests.ts'
import { KubeError, type ResourceRef } from './support/kube.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const CRD_DIR = join(ROOT, 'crds')
const EXAMPLES_DIR = join(ROOT, 'deploy', 'examples')
const WORKER = 'worker.gpustack.ai/v1alpha1'
const SETTINGS = 'gpustack.ai/v1alpha1'
const CRD_API = 'apiextensions.k8s.io/v1'
const POD_CIDRS = 'instance-isolation-pod-cidrs'
const ACCESS_ADDRESS = 'instance-access-address'

const { cluster, kube } = await startScenario()

const crdFiles = readdirSync(CRD_DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
const crds = crdFiles.flatMap((f) => documents(join(CRD_DIR, f)))

const meta = (o: JsonObject): JsonObject => (isObject(o.metadata) ? o.metadata : {})

/** The openAPIV3Schema of the (single) version of a CRD in crds/, by kind. */
function schemaOf(kind: string): JsonObject {
  const crd = crds.find((c) => objectAt(c, 'spec', 'names').kind === kind)
  if (crd === undefined) throw new Error(`no CRD of kind ${kind} in crds/`)
  const versions = objectAt(crd, 'spec').versions
  const version = Array.isArray(versions) ? versions[0] : undefined
  return objectAt(version, 'schema', 'openAPIV3Schema')
}

/** Every field path a schema declares: `.a.b`, `.list[].c`, `.map[*]`. */
function schemaPaths(schema: JsonObject, prefix = ''): string[] {
  const out: string[] = []
  if (isObject(schema.properties)) {
    for (const [name, child] of Object.entries(schema.properties)) {
      if (!isObject(child)) continue
      out.push(`${prefix}.${name}`, ...schemaPaths(child, `${prefix}.${name}`))
    }
  }
  if (isObject(schema.items)) out.push(...schemaPaths(schema.items, `${prefix}[]`))
  if (isObject(schema.additionalProperties)) out.push(`${prefix}[*]`, ...schemaPaths(schema.additionalProperties, `${prefix}[*]`))
  return out
}

/** Every field path a value holds, in the notation of {@link schemaPaths}. */
function valuePaths(value: Json | undefined, prefix = '', maps: ReadonlySet<string> = new Set()): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => valuePaths(v, `${prefix}[]`, maps))
  if (!isObject(value)) return []
  return Object.entries(value).flatMap(([k, v]) => {
    const path = maps.has(prefix) ? `${prefix}[*]` : `${prefix}.${k}`
    return [path, ...valuePaths(v, path, maps)]
  })
}

/** The API server's reason for refusing a request, or `accepted`. */
async function refusal(request: Promise<unknown>): Promise<string> {
  try {
    await request
    return 'accepted'
  } catch (err) {
    if (err instanceof KubeError) return err.reason
    throw err
  }
}

/** The text of `kubectl explain` with every run of white space as one blank (it wraps at 80). */
const flat = (text: string): string => text.replace(/\s+/g, ' ')

t.test('every CRD in crds/ is Established, its names accepted, and structural', async (t) => {
  t.ok(crds.length >= 3, `crds/ holds the Instance, InstanceType and Setting CRDs (${crdFiles.join(', ')})`)
  for (const crd of crds) {
    const name = String(meta(crd).name)
    const stored = (await kube.get({ apiVersion: CRD_API, resource: 'customresourcedefinitions', name })).body
    const conditions = (objectAt(stored, 'status').conditions as JsonObject[] | undefined) ?? []
    const status = (type: string): Json | undefined => conditions.find((c) => c.type === type)?.status
    t.equal(status('Established'), 'True', `${name} is Established`)
    t.equal(status('NamesAccepted'), 'True', `${name} has its names accepted`)
    t.equal(status('NonStructuralSchema'), undefined, `${name} has no NonStructuralSchema condition`)
    t.same(objectAt(stored, 'status', 'acceptedNames'), objectAt(crd, 'spec', 'names'), `${name} is served under the names it asks for`)
  }
})

t.test('kubectl explain shows the descriptions of instance.spec.resources.accelerator', async (t) => {
  const accelerator = objectAt(schemaOf('Instance'), 'properties', 'spec', 'properties', 'resources', 'properties', 'accelerator')
  const fields = objectAt(accelerator, 'properties')
  const { code, stdout, stderr } = await cluster.kubectl(['explain', 'instance.spec.resources.accelerator'], { allowFail: true })
  t.equal(code, 0, stderr)
  const text = flat(stdout)
  t.match(stdout, /^KIND:\s+Instance$/m)
  t.match(stdout, /^VERSION:\s+v1alpha1$/m)
  t.ok(text.includes(flat(String(accelerator.description))), `the accelerator description: ${String(accelerator.description)}`)
  t.same(Object.keys(fields).sort(), ['coresPercentage', 'count', 'family', 'memoryMiB', 'memoryPercentage', 'profile'])
  for (const [name, field] of Object.entries(fields)) {
    const description = String(objectAt(field).description)
    t.ok(description.length > 10, `${name} has a description`)
    t.ok(text.includes(` ${name} <${String(objectAt(field).type)}> `), `${name} is listed with its type`)
    t.ok(text.includes(flat(description)), `${name}: ${description}`)
  }
  const family = await cluster.kubectl(['explain', 'instance.spec.resources.accelerator.family'])
  t.match(flat(family.stdout), /ENUM: Whole Shared Sliced Partitioned/, 'the family enum is listed')
})

// ---------------------------------------------------------------------------------------------
// CEL rules, table-driven. Each bad object differs from an accepted base in the one field the
// rule is about; the API server evaluates CEL before it calls the admission webhook, so the
// refusal carries the CEL message.

const CEL_NAMESPACE = 'cel-rules'

function instance(name: string, spec: JsonObject): JsonObject {
  return {
    apiVersion: WORKER,
    kind: 'Instance',
    metadata: { name, namespace: CEL_NAMESPACE },
    spec: { type: 'hami', image: 'busybox:1.36', ...spec }
  }
}
function instanceType(name: string, spec: JsonObject): JsonObject {
  return { apiVersion: WORKER, kind: 'InstanceType', metadata: { name }, spec }
}
function setting(value: string, name = POD_CIDRS): JsonObject {
  return { apiVersion: SETTINGS, kind: 'Setting', metadata: { name }, value }
}

interface CelCase {
  name: string
  object: JsonObject
  message: string
}

const MSG = {
  memoryExclusive: 'memoryMiB and memoryPercentage are exclusive: set one',
  cpuOnly: 'count 0 means a CPU-only workspace: no other accelerator field may be set',
  countOne: 'Sliced and Partitioned take count 1',
  slicedOnly: 'memoryMiB, memoryPercentage and coresPercentage apply to the Sliced family only',
  slicedNeedsMemory: 'Sliced needs memoryMiB or memoryPercentage',
  profile: 'profile is required for the Partitioned family and allowed for it only',
  portProtocols: 'two entries share a port number with different protocols; the Service cannot carry both (use distinct port numbers)',
  portNames: 'port names must be unique',
  sshReserved: 'ssh is reserved for the SSH sidecar',
  iana: 'must be an IANA service name: lower-case letters, digits and -, with a letter, no -- and no - at either end',
  envValue: 'value and valueFrom are exclusive',
  envSource: 'set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef and fileKeyRef',
  negative: 'must not be negative',
  workspace: 'size and claimName are exclusive: an ephemeral size or a claim',
  persistentSize: 'persistent and size are exclusive: a persistent workspace takes its size in persistent.size',
  persistentClaim: 'persistent and claimName are exclusive: a claim of its own or an existing claim',
  aboveZero: 'must be above zero',
  shrink: PERSISTENT_SHRINK_MESSAGE,
  classFixed: PERSISTENT_CLASS_MESSAGE,
  removed: PERSISTENT_REMOVED_MESSAGE,
  ssh22: 'with sshPublicKey set, port 22 is the SSH port: only 22/TCP may be listed',
  partitionProfiles: 'spec.partitionProfiles needs Partitioned in spec.families',
  instanceName:
    'an Instance name must be a DNS-1035 label: at most 63 lower-case letters, digits and -, starting with a letter and ending with a letter or digit (it names the Pod label and the Service)',
  podCidrs:
    'value of instance-isolation-pod-cidrs must be comma-separated canonical CIDRs with a prefix length above 0 and host bits zero, e.g. 10.244.0.0/16,fd00:10:244::/56',
  accessAddress:
    'value of instance-access-address must be an IP address (IPv6 without brackets, no zone) or a lower-case DNS name (labels of letters, digits and -, at most 253 characters), e.g. 203.0.113.10 or gpu.example.com'
} as const

const accel = (accelerator: JsonObject): JsonObject => ({ resources: { accelerator } })

const INSTANCE_CASES: CelCase[] = [
  {
    name: 'memoryMiB with memoryPercentage',
    object: instance('mem-both', accel({ family: 'Sliced', memoryMiB: 4096, memoryPercentage: 25 })),
    message: MSG.memoryExclusive
  },
  { name: 'count 0 with a profile', object: instance('cpu-profile', accel({ count: 0, profile: '1g.10gb' })), message: MSG.cpuOnly },
  { name: 'count 0 with family Shared', object: instance('cpu-shared', accel({ count: 0, family: 'Shared' })), message: MSG.cpuOnly },
  {
    name: 'Sliced with count 2',
    object: instance('sliced-two', accel({ family: 'Sliced', count: 2, memoryPercentage: 50 })),
    message: MSG.countOne
  },
  {
    name: 'Partitioned with count 2',
    object: instance('mig-two', accel({ family: 'Partitioned', count: 2, profile: '1g.10gb' })),
    message: MSG.countOne
  },
  {
    name: 'coresPercentage on Whole',
    object: instance('whole-cores', accel({ family: 'Whole', coresPercentage: 50 })),
    message: MSG.slicedOnly
  },
  {
    name: 'Sliced without a memory share',
    object: instance('sliced-bare', accel({ family: 'Sliced', coresPercentage: 50 })),
    message: MSG.slicedNeedsMemory
  },
  { name: 'Partitioned without a profile', object: instance('mig-bare', accel({ family: 'Partitioned' })), message: MSG.profile },
  { name: 'a profile on Whole', object: instance('whole-profile', accel({ family: 'Whole', profile: '1g.10gb' })), message: MSG.profile },
  {
    name: 'one port number with two protocols',
    object: instance('port-twice', { ports: [{ port: 8000 }, { port: 8000, protocol: 'UDP' }] }),
    message: MSG.portProtocols
  },
  {
    name: 'two ports with one name',
    object: instance('name-twice', {
      ports: [
        { port: 8000, name: 'web' },
        { port: 8001, name: 'web' }
      ]
    }),
    message: MSG.portNames
  },
  { name: 'port name ssh', object: instance('port-ssh', { ports: [{ port: 2222, name: 'ssh' }] }), message: MSG.sshReserved },
  { name: 'port name with upper case', object: instance('iana-upper', { ports: [{ port: 8888, name: 'Jupyter' }] }), message: MSG.iana },
  { name: 'port name with --', object: instance('iana-dashes', { ports: [{ port: 8888, name: 'web--ui' }] }), message: MSG.iana },
  { name: 'port name without a letter', object: instance('iana-digits', { ports: [{ port: 8888, name: '8888' }] }), message: MSG.iana },
  { name: 'port name ending in -', object: instance('iana-trailing', { ports: [{ port: 8888, name: 'web-' }] }), message: MSG.iana },
  {
    name: 'env value with valueFrom',
    object: instance('env-both', { env: [{ name: 'TOKEN', value: 'x', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }] }),
    message: MSG.envValue
  },
  {
    name: 'env valueFrom with two sources',
    object: instance('env-two', {
      env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' }, configMapKeyRef: { name: 'c', key: 'k' } } }]
    }),
    message: MSG.envSource
  },
  {
    name: 'env valueFrom with no known source (an unknown one is pruned)',
    object: instance('env-none', { env: [{ name: 'TOKEN', valueFrom: {} }] }),
    message: MSG.envSource
  },
  { name: 'a negative cpu', object: instance('cpu-negative', { resources: { cpu: '-1' } }), message: MSG.negative },
  { name: 'a negative memory as an integer', object: instance('mem-negative', { resources: { memory: -1024 } }), message: MSG.negative },
  { name: 'a negative workspace size', object: instance('ws-negative', { workspace: { size: '-10Gi' } }), message: MSG.negative },
  { name: 'an Instance name starting with a digit', object: instance('1st-notebook', {}), message: MSG.instanceName },
  { name: 'an Instance name of 64 characters', object: instance('n'.repeat(64), {}), message: MSG.instanceName },
  {
    name: 'workspace size with claimName',
    object: instance('ws-both', { workspace: { size: '10Gi', claimName: 'data' } }),
    message: MSG.workspace
  },
  {
    name: 'persistent with an ephemeral size',
    object: instance('pw-size', { workspace: { size: '1Gi', persistent: { size: '10Gi' } } }),
    message: MSG.persistentSize
  },
  {
    name: 'persistent with claimName',
    object: instance('pw-claim', { workspace: { claimName: 'data', persistent: { size: '10Gi' } } }),
    message: MSG.persistentClaim
  },
  { name: 'a persistent size of "0"', object: instance('pw-zero', { workspace: { persistent: { size: '0' } } }), message: MSG.aboveZero },
  { name: 'a persistent size of 0', object: instance('pw-int-zero', { workspace: { persistent: { size: 0 } } }), message: MSG.aboveZero },
  {
    name: 'a negative persistent size',
    object: instance('pw-negative', { workspace: { persistent: { size: '-1Gi' } } }),
    message: MSG.aboveZero
  },
  {
    name: 'SSH with port 22/UDP',
    object: instance('ssh-udp', { sshPublicKey: { name: 'keys' }, ports: [{ port: 22, protocol: 'UDP' }] }),
    message: MSG.ssh22
  }
]

const lifecycle = (name: string, field: string, value: string, message: string): CelCase => ({
  name: `spec.lifecycle.${field} ${value}`,
  object: instanceType(name, { lifecycle: { [field]: value } }),
  message
})
const POSITIVE = (field: string) => `spec.lifecycle.${field} must be a positive duration such as 90s, 15m or 2h`
const NOT_NEGATIVE = (field: string) => `spec.lifecycle.${field} must be a duration such as 0s, 90s, 15m or 8h`

const INSTANCE_TYPE_CASES: CelCase[] = [
  lifecycle('idle-zero', 'idleStopAfter', '0s', POSITIVE('idleStopAfter')),
  lifecycle('idle-words', 'idleStopAfter', 'two hours', POSITIVE('idleStopAfter')),
  lifecycle('max-run-zero', 'maxRunDuration', '0', POSITIVE('maxRunDuration')),
  lifecycle('max-run-days', 'maxRunDuration', '3d', POSITIVE('maxRunDuration')),
  lifecycle('notice-negative', 'stopNotice', '-15m', NOT_NEGATIVE('stopNotice')),
  lifecycle('postpone-words', 'maxPostpone', 'eight hours', NOT_NEGATIVE('maxPostpone')),
  {
    name: 'partitionProfiles without Partitioned',
    object: instanceType('no-mig', { families: ['Whole', 'Shared'], partitionProfiles: ['1g.10gb'] }),
    message: MSG.partitionProfiles
  },
  {
    name: 'partitionProfiles with the default families',
    object: instanceType('default-families', { partitionProfiles: ['1g.10gb'] }),
    message: MSG.partitionProfiles
  },
  {
    name: 'an access selector with In and no values',
    object: instanceType('in-without-values', { access: { namespaceSelector: { matchExpressions: [{ key: 'tier', operator: 'In' }] } } }),
    message: 'In and NotIn need at least one value; Exists and DoesNotExist take none'
  },
  {
    name: 'an access selector with DoesNotExist and values',
    object: instanceType('absent-with-values', {
      access: { namespaceSelector: { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist', values: ['x'] }] } }
    }),
    message: 'In and NotIn need at least one value; Exists and DoesNotExist take none'
  },
  {
    name: 'an access selector whose matchLabels key is not a label key',
    object: instanceType('bad-label-key', { access: { namespaceSelector: { matchLabels: { 'a/b/c': 'x' } } } }),
    message: 'every key must be a label key (a qualified name)'
  },
  {
    name: 'an access selector whose expression key has a name part over 63 characters',
    object: instanceType('long-key', {
      access: { namespaceSelector: { matchExpressions: [{ key: `example.com/${'k'.repeat(64)}`, operator: 'Exists' }] } }
    }),
    message: 'must be a label key (a qualified name)'
  }
]

const SETTING_CASES: CelCase[] = [
  { name: 'pod CIDR 10.0.0.1/8 (host bits set)', object: setting('10.0.0.1/8'), message: MSG.podCidrs },
  { name: 'pod CIDR 0.0.0.0/0 (prefix 0)', object: setting('0.0.0.0/0'), message: MSG.podCidrs },
  { name: 'pod CIDR ::/0 (prefix 0)', object: setting('::/0'), message: MSG.podCidrs },
  { name: 'pod CIDR not-a-cidr', object: setting('not-a-cidr'), message: MSG.podCidrs },
  { name: 'pod CIDR fd00::1/64 (host bits set)', object: setting('fd00::1/64'), message: MSG.podCidrs },
  { name: 'pod CIDR FD00::/64 (not canonical)', object: setting('FD00::/64'), message: MSG.podCidrs },
  { name: 'one good and one bad pod CIDR', object: setting('10.244.0.0/16,10.96.0.1/12'), message: MSG.podCidrs },
  { name: 'an empty entry between commas', object: setting('10.244.0.0/16,,fd00:10:244::/56'), message: MSG.podCidrs }
]

const ACCESS_ADDRESS_CASES: CelCase[] = [
  { name: 'an IPv6 address in brackets', object: setting('[2001:db8::10]', ACCESS_ADDRESS), message: MSG.accessAddress },
  { name: 'a host with a port', object: setting('gpu.example.com:2222', ACCESS_ADDRESS), message: MSG.accessAddress },
  { name: 'an upper-case DNS name', object: setting('GPU.example.com', ACCESS_ADDRESS), message: MSG.accessAddress },
  { name: 'a URL', object: setting('https://gpu.example.com/', ACCESS_ADDRESS), message: MSG.accessAddress },
  { name: 'a shell word', object: setting('gpu.example.com; rm -rf /', ACCESS_ADDRESS), message: MSG.accessAddress }
]

/** Updates of a stored Instance that a transition rule (oldSelf) refuses: `from` is stored first. */
interface TransitionCase extends CelCase {
  from: JsonObject
}
const persistent = (value: JsonObject | undefined): JsonObject => ({ workspace: value === undefined ? {} : { persistent: value } })
const FAST_10GI = persistent({ size: '10Gi', storageClassName: 'fast' })

const TRANSITION_CASES: TransitionCase[] = [
  { name: 'a shrink', from: FAST_10GI, object: instance('pw', persistent({ size: '9Gi', storageClassName: 'fast' })), message: MSG.shrink },
  {
    name: 'a shrink written as an integer',
    from: FAST_10GI,
    object: instance('pw', persistent({ size: 1024, storageClassName: 'fast' })),
    message: MSG.shrink
  },
  {
    name: 'another class',
    from: FAST_10GI,
    object: instance('pw', persistent({ size: '10Gi', storageClassName: 'slow' })),
    message: MSG.classFixed
  },
  { name: 'the class removed', from: FAST_10GI, object: instance('pw', persistent({ size: '10Gi' })), message: MSG.classFixed },
  { name: 'a class added', from: persistent({ size: '10Gi' }), object: instance('pw', FAST_10GI), message: MSG.classFixed },
  { name: 'persistent removed', from: FAST_10GI, object: instance('pw', persistent(undefined)), message: MSG.removed },
  { name: 'the workspace removed', from: FAST_10GI, object: instance('pw', {}), message: MSG.removed }
]

t.test('every CEL rule in crds/ has a case in the table below', async (t) => {
  const covered = new Set(
    [...INSTANCE_CASES, ...TRANSITION_CASES, ...INSTANCE_TYPE_CASES, ...SETTING_CASES, ...ACCESS_ADDRESS_CASES].map((c) => c.message)
  )
  // The cell pool CRDs' rules have their table in 40-cellpool-admission.test.ts.
  const declared = [
    ...new Set(crds.filter((crd) => objectAt(crd, 'spec').group !== 'cells.kubeswift.io').flatMap((crd) => celMessages(crd)))
  ].sort()
  t.ok(declared.length >= 15, `${declared.length} rules`)
  t.same(
    declared.filter((m) => !covered.has(m)),
    [],
    'no rule without a case'
  )
  t.same([...covered].filter((m) => !declared.includes(m)).sort(), [], 'no case for a rule the CRDs lack')
})

t.test('a valid base object of each kind is accepted', async (t) => {
  await cluster.kubectl(['create', 'namespace', CEL_NAMESPACE])
  const objects = [
    instance('base', {
      ports: [
        { port: 8000, name: 'web' },
        { port: 8001, protocol: 'UDP' }
      ],
      sshPublicKey: { name: 'keys' },
      workspace: { size: '10Gi' }
    }),
    instance('base-sliced', accel({ family: 'Sliced', count: 1, memoryMiB: 4096, coresPercentage: 30 })),
    instance('base-mig', accel({ family: 'Partitioned', profile: '1g.10gb' })),
    instance('base-cpu', accel({ count: 0 })),
    instance('base-env', {
      env: [
        { name: 'my.var 1', value: 'relaxed name' },
        { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } },
        { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: 1 } } }
      ],
      resources: { cpu: '500m', memory: 1073741824 },
      nodeName: 'gpu-1.zone-a.example.com'
    }),
    instanceType('base', { families: ['Whole', 'Partitioned'], partitionProfiles: ['1g.10gb'] })
  ]
  for (const object of objects) {
    const { code, stderr } = await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(object), allowFail: true })
    t.equal(code, 0, `${String(object.kind)} ${String(meta(object).name)} is created: ${stderr}`)
  }
})

for (const [kind, cases] of [
  ['Instance', INSTANCE_CASES],
  ['InstanceType', INSTANCE_TYPE_CASES]
] as const) {
  t.test(`CEL refuses a bad ${kind}, each with the rule's message`, async (t) => {
    for (const c of cases) {
      const { code, stderr } = await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(c.object), allowFail: true })
      t.equal(code, 1, `${c.name}: kubectl exits 1`)
      t.ok(stderr.includes(c.message), `${c.name}: ${c.message}\n  got: ${stderr.trim()}`)
      t.notMatch(stderr, /admission webhook/, `${c.name}: refused by the schema, before the webhook is asked`)
      const ref = {
        apiVersion: WORKER,
        resource: kind === 'Instance' ? 'instances' : 'instancetypes',
        name: String(meta(c.object).name),
        ...(kind === 'Instance' ? { namespace: CEL_NAMESPACE } : {})
      }
      t.equal(await refusal(kube.get(ref)), 'NotFound', `${c.name}: nothing was stored`)
    }
  })
}

t.test('CEL transition rules: a persistent workspace grows, never shrinks, keeps its class and stays', async (t) => {
  const ref = (name: string): ResourceRef => ({ apiVersion: WORKER, resource: 'instances', namespace: CEL_NAMESPACE, name })
  /** An update (PUT) of the stored Instance with `object`'s spec: 0 and no text, or 1 and the API server's message. */
  const replace = async (object: JsonObject): Promise<{ code: number; stderr: string }> => {
    const stored = (await kube.get(ref(String(meta(object).name)))).body
    try {
      await kube.update(ref(String(meta(object).name)), { ...stored, spec: object.spec ?? {} })
      return { code: 0, stderr: '' }
    } catch (err) {
      if (err instanceof KubeError) return { code: 1, stderr: err.apiMessage }
      throw err
    }
  }
  const storedSpec = async (): Promise<Json | undefined> => (await kube.get(ref('pw'))).body.spec
  for (const c of TRANSITION_CASES) {
    await cluster.kubectl(['delete', 'instance', 'pw', '-n', CEL_NAMESPACE, '--ignore-not-found', '--wait'])
    const created = await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(instance('pw', c.from)), allowFail: true })
    t.equal(created.code, 0, `${c.name}: the first version is created: ${created.stderr}`)
    const before = await storedSpec()
    const { code, stderr } = await replace(c.object)
    t.equal(code, 1, `${c.name}: kubectl exits 1`)
    t.ok(stderr.includes(c.message), `${c.name}: ${c.message}\n  got: ${stderr.trim()}`)
    t.notMatch(stderr, /admission webhook/, `${c.name}: refused by the schema`)
    t.same(await storedSpec(), before, `${c.name}: the stored spec is unchanged`)
  }
  // Allowed: the same amount in another spelling, a grow, a persistent workspace added.
  await cluster.kubectl(['delete', 'instance', 'pw', '-n', CEL_NAMESPACE, '--ignore-not-found', '--wait'])
  await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(instance('pw', FAST_10GI)) })
  for (const [name, spec] of [
    ['the same amount as an integer', persistent({ size: 10737418240, storageClassName: 'fast' })],
    ['a grow', persistent({ size: '20Gi', storageClassName: 'fast' })],
    ['the same amount in Mi', persistent({ size: '20480Mi', storageClassName: 'fast' })]
  ] as const) {
    const { code, stderr } = await replace(instance('pw', spec))
    t.equal(code, 0, `${name} is accepted: ${stderr}`)
  }
  await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(instance('pw-later', {})) })
  const added = await replace(instance('pw-later', persistent({ size: '1Gi' })))
  t.equal(added.code, 0, `a persistent workspace added later is accepted: ${added.stderr}`)
})

/**
 * Applies each of `accepted` as the value of Setting `name` (each is stored as written), then each
 * case (each refused with its CEL message, the last accepted value left in place).
 */
async function settingRule(t: Test, name: string, accepted: readonly string[], cases: readonly CelCase[]): Promise<void> {
  const stored = async (): Promise<Json | undefined> => (await kube.get({ apiVersion: SETTINGS, resource: 'settings', name })).body.value
  for (const value of accepted) {
    const { code, stderr } = await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(setting(value, name)), allowFail: true })
    t.equal(code, 0, `${JSON.stringify(value)} is accepted: ${stderr}`)
    t.equal(await stored(), value, `${JSON.stringify(value)} is stored as written`)
  }
  for (const c of cases) {
    const { code, stderr } = await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(c.object), allowFail: true })
    t.equal(code, 1, `${c.name}: kubectl exits 1`)
    t.ok(stderr.includes(c.message), `${c.name}: the CEL message\n  got: ${stderr.trim()}`)
    t.equal(await stored(), accepted.at(-1), `${c.name}: the stored value is unchanged`)
  }
}

t.test(`CEL refuses a malformed ${POD_CIDRS} value, and accepts blank and canonical CIDRs`, async (t) => {
  await settingRule(t, POD_CIDRS, ['', '   ', '10.244.0.0/16, fd00:10:244::/56'], SETTING_CASES)
  const other = { apiVersion: SETTINGS, kind: 'Setting', metadata: { name: 'some-other-setting' }, value: 'not-a-cidr' }
  const { code, stderr } = await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(other), allowFail: true })
  t.equal(code, 0, `the CIDR rule applies to ${POD_CIDRS} only: ${stderr}`)
  await kube.delete({ apiVersion: SETTINGS, resource: 'settings', name: 'some-other-setting' })
  await kube.delete({ apiVersion: SETTINGS, resource: 'settings', name: POD_CIDRS })
})

t.test(`CEL refuses a malformed ${ACCESS_ADDRESS} value, and accepts blank, IP addresses and DNS names`, async (t) => {
  await settingRule(t, ACCESS_ADDRESS, ['', '  ', '203.0.113.10', '2001:db8::10', 'gpu.example.com'], ACCESS_ADDRESS_CASES)
  await kube.delete({ apiVersion: SETTINGS, resource: 'settings', name: ACCESS_ADDRESS })
})

/**
 * Each of `edges` as the value of Setting `name`, asked of the API server (a dry run) and of the
 * hook's own reading (`hookAccepts`): the two verdicts agree.
 */
async function sameVerdicts(t: Test, name: string, edges: readonly string[], hookAccepts: (value: string) => boolean): Promise<void> {
  for (const value of edges) {
    const verdict = await refusal(kube.request('POST', '/apis/gpustack.ai/v1alpha1/settings?dryRun=All', setting(value, name)))
    t.ok(verdict === 'accepted' || verdict === 'Invalid', `${JSON.stringify(value)}: ${verdict}`)
    const hook = hookAccepts(value) ? 'accepted' : 'Invalid'
    t.equal(hook, verdict, `${JSON.stringify(value)}: the API server says ${verdict}, the hook ${hook}`)
  }
}

/** Values on the edge of the access-address rule; the Instance hook reads the value itself. */
const ACCESS_ADDRESS_EDGES = [
  '192.0.2.1',
  ' 192.0.2.1\t',
  '01.2.3.4',
  '1.2.3',
  '256.1.1.1',
  '::1',
  '2001:DB8::1',
  '2001:db8:0:0:0:0:0:1',
  '::ffff:192.0.2.1',
  '::ffff:c000:201',
  '64:ff9b::192.0.2.1',
  'fe80::1%eth0',
  '[::1]',
  'localhost',
  'a',
  '1',
  'gpu-1.example.com',
  'gpu.example.com.',
  'xn--bcher-kva.example',
  'a'.repeat(63) + '.example.com',
  'a'.repeat(64) + '.example.com',
  ('a'.repeat(62) + '.').repeat(4).slice(0, 253),
  ('a'.repeat(62) + '.').repeat(4) + 'ab',
  'gpu_1.example.com',
  '\u00a0gpu.example.com',
  '\u0085gpu.example.com',
  '\ufeffgpu.example.com'
]

t.test(`the Instance hook accepts exactly the ${ACCESS_ADDRESS} values the CEL rule accepts`, async (t) => {
  await sameVerdicts(t, ACCESS_ADDRESS, ACCESS_ADDRESS_EDGES, (value) => readAccessAddress(value).problem === undefined)
})

/**
 * Values on the edge of the pod-CIDR rule. The isolation hook parses the value itself
 * (hooks/isolation/cidrs.ts) and promises to accept exactly what the CEL rule accepts; here the
 * real CEL library is the judge.
 */
const POD_CIDR_EDGES = [
  '10.244.0.0/16',
  ' 10.244.0.0/16 ,\tfd00:10:244::/56\n',
  '\u00a010.244.0.0/16\u3000',
  '\u008510.244.0.0/16',
  '\ufeff10.244.0.0/16',
  '\u200b10.244.0.0/16',
  ' \t\n\u00a0\u0085',
  '10.244.0.0/16,',
  ',',
  '010.244.0.0/16',
  '10.244.0.0/016',
  '10.244.0.0/33',
  '10.244.0.0',
  '0.0.0.0/1',
  '128.0.0.0/1',
  '1.2.3.4/32',
  '::/1',
  '8000::/1',
  'fd00::/8',
  'FD00::/8',
  'fd00:0::/8',
  'fd00:0:0:0:0:0:0:0/8',
  '2001:db8:0:0:1:0:0:0/128',
  '2001:db8:0:0:1::/128',
  '2001:db8::1:0:0:1/128',
  '2001:db8:0:0:1:0:0:1/128',
  '2001:db8::/32,2001:db8::/32',
  '::ffff:10.0.0.0/104',
  '::ffff:a00:0/104',
  '::1.2.3.0/120',
  '::102:300/120',
  '64:ff9b::/96',
  'fe80::/64',
  'fe80::%eth0/64',
  'fd00:10:244::/56 ,fd00:10:244::/56'
]

t.test(`the isolation hook accepts exactly the ${POD_CIDRS} values the CEL rule accepts`, async (t) => {
  await sameVerdicts(t, POD_CIDRS, POD_CIDR_EDGES, (value) => parsePodCidrs(value).state !== 'invalid')
})

// ---------------------------------------------------------------------------------------------

/** Which kinds must exist before which: the namespace first, then what Instances refer to. */
const KIND_ORDER: Record<string, number> = { Namespace: 0, InstanceType: 1, Setting: 1, Secret: 2, PersistentVolumeClaim: 2, Instance: 3 }
const rank = (o: JsonObject): number => KIND_ORDER[String(o.kind)] ?? 2

t.test('every example in deploy/examples is created, in dependency order, and reads back as written', async (t) => {
  const files = readdirSync(EXAMPLES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .map((file) => ({ file, docs: documents(join(EXAMPLES_DIR, file)) }))
  t.ok(files.length > 0)
  for (const { file, docs } of files) {
    t.same(docs.map(rank), docs.map(rank).sort(), `${file} lists its objects in dependency order`)
  }
  files.sort((a, b) => Math.max(...a.docs.map(rank)) - Math.max(...b.docs.map(rank)) || (a.file < b.file ? -1 : 1))
  for (const { file } of files) {
    const { code, stdout, stderr } = await cluster.kubectl(['apply', '-f', join(EXAMPLES_DIR, file)], { allowFail: true })
    t.equal(code, 0, `kubectl apply -f ${file}: ${stdout.trim()} ${stderr.trim()}`)
    t.notMatch(stderr, /Warning/, `${file}: no warnings`)
  }
  const versions = new Map<string, Json | undefined>()
  const refOf = async (doc: JsonObject): Promise<ResourceRef> => {
    const info = await kube.resourceInfo(String(doc.apiVersion), String(doc.kind))
    return {
      apiVersion: String(doc.apiVersion),
      resource: info.resource,
      name: String(meta(doc).name),
      ...(info.namespaced ? { namespace: String(meta(doc).namespace) } : {})
    }
  }
  for (const { file, docs } of files) {
    for (const doc of docs) {
      const got = (await kube.get(await refOf(doc))).body
      const what = `${file}: ${String(doc.kind)} ${String(meta(doc).name)}`
      versions.set(what, meta(got).resourceVersion)
      if (doc.kind === 'Secret') {
        const data = objectAt(got, 'data')
        for (const [key, text] of Object.entries(objectAt(doc, 'stringData'))) {
          t.equal(Buffer.from(String(data[key]), 'base64').toString('utf8'), text, `${what}: ${key}`)
        }
        continue
      }
      const { metadata, ...fields } = doc
      t.hasStrict(got, fields, `${what} holds every field as written`)
      if (isObject(metadata) && isObject(metadata.labels)) t.hasStrict(meta(got).labels, metadata.labels, `${what}: labels`)
    }
  }
  // Applying again writes nothing: no example fights a server default. (kubectl may still print
  // "configured": it sends a Secret's stringData, and a whole list when the server defaulted a
  // field inside it, on every apply; the API server then finds nothing to change.)
  for (const { file, docs } of files) {
    await cluster.kubectl(['apply', '-f', join(EXAMPLES_DIR, file)])
    for (const doc of docs) {
      const what = `${file}: ${String(doc.kind)} ${String(meta(doc).name)}`
      const got = (await kube.get(await refOf(doc))).body
      t.equal(meta(got).resourceVersion, versions.get(what), `${what}: a second apply leaves the resourceVersion`)
    }
  }
})

/**
 * The status the Instance hook writes for a running Instance with a port, an SSH key and a shared
 * GPU: the unit fixtures' world (Metacontroller's apply, a kubelet's Pod status) run to a fixed point.
 */
function runningStatus(): JsonObject {
  const spec = fixtures.baseSpec({
    ports: [{ port: 8000, name: 'web' }],
    sshPublicKey: { name: 'keys' },
    resources: { accelerator: { family: 'Shared', count: 1 } },
    workspace: { persistent: { size: '10Gi', storageClassName: 'fast' } }
  })
  const world = new fixtures.InstanceWorld(spec, {
    related: [fixtures.instanceType(), fixtures.namespaceObject(), fixtures.keySecret(), fixtures.storageClass('fast')]
  })
  world.settle(sync)
  world.bindClaim('10Gi')
  world.stampPod(fixtures.POD_STATUS.running)
  const status = world.settle(sync).status as unknown as JsonObject
  // `accelerator.claim` is reported only for a DRA type (the ResourceClaim the Pod's status names);
  // written here as such a Pod would name it, so that the schema's every field goes through.
  // The persistent workspace's claim is bound as the binder would.
  // `connect.message` stands in for the address when the Setting instance-access-address cannot be
  // used; written here beside the address so that the schema's every field goes through.
  return {
    ...status,
    accelerator: { ...(status.accelerator as JsonObject), claim: 'status-probe-accelerator-7xk2p' },
    connect: { ...(status.connect as JsonObject), message: 'Setting instance-access-address value is unusable.' },
    // `workspace.message` says why a claim waits or differs from the spec; a bound one needs none.
    workspace: { ...(status.workspace as JsonObject), message: 'spec.workspace.persistent.size 20Gi waits: the claim is not Bound yet.' },
    // `lifecycle` comes with a type's spec.lifecycle (its decision has its own tests); every field
    // written at once, `stoppedBy` as a stopped Instance reports it.
    lifecycle: {
      idleSince: '2026-12-02T12:04:00Z',
      stopAt: '2026-12-02T14:04:00Z',
      stopReason: 'Idle',
      postponedUntil: '2026-12-02T14:04:00Z',
      stopRequested: true,
      stoppedBy: { reason: 'Idle', at: '2026-12-02T14:04:05Z' }
    }
  }
}

t.test(
  'an Instance status as the hook writes it, every field of the schema set, reads back unpruned through the status subresource',
  async (t) => {
    const ref = { apiVersion: WORKER, resource: 'instances', namespace: CEL_NAMESPACE, name: 'status-probe' }
    const created = (
      await kube.create(ref, instance('status-probe', { ports: [{ port: 8000, name: 'web' }], sshPublicKey: { name: 'keys' } }))
    ).body
    const status = runningStatus()
    const statusSchema = objectAt(schemaOf('Instance'), 'properties', 'status')
    const maps = new Set(['.accelerator.resources'])
    const missing = schemaPaths(statusSchema).filter((p) => !valuePaths(status, '', maps).includes(p))
    t.same(missing, [], 'the written status sets every field the schema declares')

    const written = (await kube.updateStatus(ref, { ...created, status })).body
    t.same(written.status, status, 'the status answer equals what was written')
    const read = (await kube.get(ref)).body
    t.same(read.status, status, 'a fresh read equals what was written: nothing pruned')
    t.equal(meta(read).generation, meta(created).generation, 'a status write does not bump the generation')

    // The main endpoint ignores status: only the subresource writes it.
    const relabelled = { ...read, metadata: { ...meta(read), labels: { probe: 'yes' } }, status: { phase: 'Failed' } }
    const updated = (await kube.update(ref, relabelled)).body
    t.same(meta(updated).labels, { probe: 'yes' })
    t.same(updated.status, status, 'a status sent to the main endpoint is dropped')
  }
)

t.test('an Instance whose status breaks the schema is refused through the status subresource', async (t) => {
  const ref = { apiVersion: WORKER, resource: 'instances', namespace: CEL_NAMESPACE, name: 'status-probe' }
  const current = (await kube.get(ref)).body
  t.equal(await refusal(kube.updateStatus(ref, { ...current, status: { phase: 'Exploded' } })), 'Invalid', 'phase outside the enum')
  const after = (await kube.get(ref)).body
  t.equal(objectAt(after, 'status').phase, 'Running')
})
