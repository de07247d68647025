import { readdirSync, readFileSync } from 'node:fs'
import { isIPv4, isIPv6 } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import t from 'tap'
import { parse, parseAllDocuments } from 'yaml'
import { WORKLOAD_KUBECONFIG_LABEL } from '../../hooks/api/cellnodeset.ts'
import { GPUCellPoolSchema, type GPUCellPool } from '../../hooks/api/gpucellpool.ts'
import { InstanceSchema, type Instance } from '../../hooks/api/instance.ts'
import { bootstrapValues, renderBootstrap } from '../../hooks/cellpool/build/bootstrap.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import { poolProblems } from '../../hooks/cellpool/rules/validate.ts'
import { InstanceTypeSchema, type InstanceType } from '../../hooks/api/instancetype.ts'
import { typeProblems } from '../../hooks/instance/validate.ts'
import {
  DEFAULT_SSH_SERVER_IMAGE,
  ISOLATION_POD_CIDRS_SETTING,
  SSH_SERVER_IMAGE_SETTING,
  SettingSchema,
  type Setting
} from '../../hooks/api/setting.ts'

const EXAMPLES_DIR = fileURLToPath(new URL('../../deploy/examples/', import.meta.url))
const NAMESPACE = 'gpu-workspaces'

interface Doc {
  file: string
  object: {
    apiVersion: string
    kind: string
    metadata: { name: string; namespace?: string; labels?: Record<string, string> }
    [field: string]: unknown
  }
}

/** Every YAML document under deploy/examples, read the way kubectl reads it (YAML 1.1). */
function loadExamples(): Doc[] {
  const docs: Doc[] = []
  for (const file of readdirSync(EXAMPLES_DIR)
    .filter((name) => name.endsWith('.yaml'))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(EXAMPLES_DIR, file), 'utf8'), { version: '1.1' })) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`)
      const object: unknown = doc.toJS()
      if (object === null || object === undefined) continue
      docs.push({ file, object: object as Doc['object'] })
    }
  }
  return docs
}

const examples = loadExamples()
/** A fresh copy of every example of `kind`, so a test may change it, with its metadata. */
function ofKind<T>(kind: string): Array<{ file: string; meta: Doc['object']['metadata']; object: T }> {
  return examples
    .filter((d) => d.object.kind === kind)
    .map((d) => ({ file: d.file, meta: d.object.metadata, object: structuredClone(d.object) as T }))
}

const SCHEMAS: Record<string, TSchema> = {
  'worker.gpustack.ai/v1alpha1 Instance': InstanceSchema,
  'worker.gpustack.ai/v1alpha1 InstanceType': InstanceTypeSchema,
  'gpustack.ai/v1alpha1 Setting': SettingSchema,
  'cells.kubeswift.io/v1alpha1 GPUCellPool': GPUCellPoolSchema
}

function errorsOf(schema: TSchema, value: unknown): string[] {
  return [...Value.Errors(schema, value)].map((e) => `${e.path}: ${e.message}`)
}

t.test('every example is a named Kubernetes object; namespaced ones live in gpu-workspaces', async (t) => {
  t.ok(examples.length > 0)
  const clusterScoped = new Set(['Namespace', 'InstanceType', 'Setting'])
  for (const { file, object } of examples) {
    t.match(object, { apiVersion: String, kind: String, metadata: { name: String } }, `${file} ${object.kind}`)
    if (clusterScoped.has(object.kind)) t.equal(object.metadata.namespace, undefined, `${file}: ${object.kind} is cluster-scoped`)
    else t.equal(object.metadata.namespace, NAMESPACE, `${file}: ${object.kind}/${object.metadata.name}`)
  }
  const keys = examples.map(({ object }) => `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`)
  t.same(keys, [...new Set(keys)], 'no two examples are the same object')
})

t.test('the namespace enforces Pod Security privileged, which the SSH sidecar needs', async (t) => {
  const namespaces = examples.filter((d) => d.object.kind === 'Namespace')
  t.equal(namespaces.length, 1)
  const namespace = namespaces[0]?.object
  t.equal(namespace?.metadata.name, NAMESPACE)
  t.equal(namespace?.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'privileged')
  // kubectl apply -f deploy/examples/ goes in file-name order: the namespace must come first.
  const firstNamespaced = examples.findIndex((d) => d.object.metadata.namespace === NAMESPACE)
  t.ok(examples.findIndex((d) => d.object.kind === 'Namespace') < firstNamespaced, 'the Namespace file sorts first')
})

t.test('every custom resource example passes the TypeBox schema the hooks check', async (t) => {
  let checked = 0
  for (const { file, object } of examples) {
    const schema = SCHEMAS[`${object.apiVersion} ${object.kind}`]
    if (schema === undefined) continue
    checked += 1
    t.same(errorsOf(schema, object), [], `${file}: ${object.kind}/${object.metadata.name}`)
    t.ok(Value.Check(schema, object), `${file}: Value.Check`)
  }
  t.ok(checked >= 10, `${checked} custom resources checked`)
})

t.test('there is an InstanceType per device plugin, and the NVIDIA one offers MIG profiles', async (t) => {
  const types = ofKind<InstanceType>('InstanceType')
  t.same(types.map((x) => x.object.spec.devicePlugin ?? 'HAMi').sort(), ['DRA', 'DRA', 'GPUStack', 'HAMi', 'NVIDIA'])
  t.equal(types.find((x) => x.file === 'hami.yaml')?.object.spec.devicePlugin, 'HAMi', 'hami.yaml is the HAMi type')
  const nvidia = types.find((x) => x.object.spec.devicePlugin === 'NVIDIA')?.object.spec
  t.ok((nvidia?.partitionProfiles ?? []).length > 0, 'NVIDIA offers partition profiles')
  t.ok(nvidia?.families?.includes('Partitioned'), 'NVIDIA offers the Partitioned family')
  t.notOk(nvidia?.families?.includes('Sliced'), 'the NVIDIA device plugin has no Sliced family')
})

t.test('there is an Instance per family, a CPU-only one and one with SSH and ports', async (t) => {
  const instances = ofKind<Instance>('Instance').map((x) => x.object)
  const familyOf = (i: Instance) => {
    const accelerator = i.spec.resources?.accelerator
    if (accelerator === undefined || accelerator.count === 0) return 'CPU'
    return accelerator.family ?? 'Whole'
  }
  t.same([...new Set(instances.map(familyOf))].sort(), ['CPU', 'Partitioned', 'Shared', 'Sliced', 'Whole'])
  const sliced = instances.find((i) => familyOf(i) === 'Sliced' && i.spec.type === 'hami')?.spec.resources?.accelerator
  t.ok(sliced?.memoryPercentage !== undefined && sliced.coresPercentage !== undefined, 'Sliced shows memoryPercentage and coresPercentage')
  const draTypes = new Set(
    ofKind<InstanceType>('InstanceType')
      .filter((x) => x.object.spec.devicePlugin === 'DRA')
      .map((x) => x.meta.name)
  )
  t.ok(
    instances.some((i) => draTypes.has(i.spec.type) && familyOf(i) === 'Sliced'),
    'a Sliced Instance on a DRA type shows the capacity request'
  )
  const ssh = instances.find((i) => i.spec.sshPublicKey !== undefined)
  t.ok(ssh, 'an Instance with SSH')
  t.ok((ssh?.spec.ports ?? []).length > 0, 'the SSH Instance exposes ports too')
})

t.test('each Instance can be served by the example InstanceType it names', async (t) => {
  const types = new Map(ofKind<InstanceType>('InstanceType').map((x) => [x.meta.name, x.object.spec]))
  for (const { meta, object: instance } of ofKind<Instance>('Instance')) {
    const name = `Instance ${meta.name}`
    const type = types.get(instance.spec.type)
    t.ok(type, `${name}: InstanceType ${instance.spec.type} is an example`)
    const accelerator = instance.spec.resources?.accelerator
    if (type === undefined || accelerator === undefined || accelerator.count === 0) continue
    const family = accelerator.family ?? 'Whole'
    t.ok((type.families ?? ['Whole']).includes(family), `${name}: ${instance.spec.type} offers ${family}`)
    t.ok((accelerator.count ?? 1) <= (type.maxCount ?? Infinity), `${name}: count within maxCount`)
    if (family === 'Sliced') t.not(type.devicePlugin, 'NVIDIA', `${name}: Sliced is not on the NVIDIA plugin`)
    if (family === 'Partitioned') t.ok(type.partitionProfiles?.includes(accelerator.profile ?? ''), `${name}: profile is offered`)
    if (type.devicePlugin === 'DRA') {
      t.equal(typeProblems(instance.spec, instance.spec.type, type).length, 0, `${name}: the DRA type has a class for ${family}`)
    }
  }
})

t.test("the SSH Instance's Secret holds an authorized_keys line", async (t) => {
  const secrets = examples.filter((d) => d.object.kind === 'Secret').map((d) => d.object)
  for (const { meta, object: instance } of ofKind<Instance>('Instance')) {
    const secretName = instance.spec.sshPublicKey?.name
    if (secretName === undefined) continue
    const secret = secrets.find((s) => s.metadata.name === secretName && s.metadata.namespace === meta.namespace)
    const keys = (secret?.stringData as Record<string, string> | undefined)?.authorized_keys ?? ''
    const lines = keys.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'))
    t.ok(lines.length > 0, `Secret ${secretName} has authorized_keys`)
    for (const line of lines)
      t.match(line, /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com) [A-Za-z0-9+/]+=* ?\S*$/)
    t.ok(
      instance.spec.ports?.every((p) => p.port !== 22 && p.name !== 'ssh'),
      'no user port takes the SSH port or name'
    )
  }
})

t.test('the Settings: dual-stack pod CIDRs and the published SSH image', async (t) => {
  const settings = new Map(ofKind<Setting>('Setting').map((x) => [x.meta.name, x.object.value]))
  const cidrs = (settings.get(ISOLATION_POD_CIDRS_SETTING) ?? '').split(',').map((c) => c.trim())
  const address = (cidr: string) => cidr.split('/')[0] ?? ''
  t.ok(cidrs.some((c) => isIPv4(address(c))) && cidrs.some((c) => isIPv6(address(c))), 'one IPv4 and one IPv6 CIDR')
  for (const cidr of cidrs) {
    const prefix = Number(cidr.split('/')[1])
    t.ok(Number.isInteger(prefix) && prefix > 0 && prefix <= (isIPv4(address(cidr)) ? 32 : 128), `${cidr} has a prefix length above 0`)
  }
  t.equal(settings.get(SSH_SERVER_IMAGE_SETTING), DEFAULT_SSH_SERVER_IMAGE, 'the SSH image example is the published default')
})

t.test('the schemas reject bad objects at the field at fault', async (t) => {
  const instance = ofKind<Instance>('Instance').find((x) => x.file === 'instance-ssh.yaml')?.object
  const instanceType = ofKind<InstanceType>('InstanceType').find((x) => x.file === 'hami.yaml')?.object
  const setting = ofKind<Setting>('Setting')[0]?.object
  if (instance === undefined || instanceType === undefined || setting === undefined) throw new Error('examples missing')
  // Each row replaces spec fields of the example (undefined removes one) and names the path at fault.
  const instanceRows: SpecRow[] = [
    {
      name: 'an unknown family',
      spec: { resources: { accelerator: { family: 'Fractional' } } },
      path: '/spec/resources/accelerator/family'
    },
    { name: 'a port above 65535', spec: { ports: [{ port: 70000 }] }, path: '/spec/ports/0/port' },
    { name: 'a port name over 15 characters', spec: { ports: [{ port: 80, name: 'a-very-long-port-name' }] }, path: '/spec/ports/0/name' },
    { name: 'no image', spec: { image: undefined }, path: '/spec/image' },
    { name: 'a cpu that is not a quantity', spec: { resources: { cpu: 'lots' } }, path: '/spec/resources/cpu' },
    {
      name: 'a memory share of 0%',
      spec: { resources: { accelerator: { family: 'Sliced', memoryPercentage: 0 } } },
      path: '/spec/resources/accelerator/memoryPercentage'
    },
    { name: 'a negative count', spec: { resources: { accelerator: { count: -1 } } }, path: '/spec/resources/accelerator/count' },
    { name: 'a relative mount path', spec: { workspace: { mountPath: 'work' } }, path: '/spec/workspace/mountPath' },
    { name: 'stop as a string', spec: { stop: 'yes' }, path: '/spec/stop' }
  ]
  const instanceTypeRows: SpecRow[] = [
    { name: 'an unknown device plugin', spec: { devicePlugin: 'AMD' }, path: '/spec/devicePlugin' },
    { name: 'no families', spec: { families: [] }, path: '/spec/families' },
    { name: 'a node selector value that is not a string', spec: { nodeSelector: { gpu: true } }, path: '/spec/nodeSelector/gpu' },
    { name: 'a resource name without a domain', spec: { resourceName: 'gpu' }, path: '/spec/resourceName' },
    { name: 'a maxCount of 0', spec: { maxCount: 0 }, path: '/spec/maxCount' }
  ]
  const cases: Array<{ name: string; schema: TSchema; given: unknown; path: string }> = [
    ...instanceRows.map((r) => ({ name: r.name, schema: InstanceSchema, given: withSpec(instance, r.spec), path: r.path })),
    ...instanceTypeRows.map((r) => ({ name: r.name, schema: InstanceTypeSchema, given: withSpec(instanceType, r.spec), path: r.path })),
    {
      name: 'a setting value over 4096 characters',
      schema: SettingSchema,
      given: { ...structuredClone(setting), value: 'x'.repeat(4097) },
      path: '/value'
    }
  ]
  for (const c of cases) {
    const errors = errorsOf(c.schema, c.given)
    t.notOk(Value.Check(c.schema, c.given), `${c.name} is rejected`)
    t.ok(
      errors.some((e) => e.startsWith(`${c.path}: `)),
      `${c.name} is reported at ${c.path}`,
      { errors }
    )
  }
})

/** A bad spec: the fields it replaces in an example, and the path its error must be reported at. */
interface SpecRow {
  name: string
  spec: Record<string, unknown>
  path: string
}

/** A deep copy of an example with `fields` of its spec replaced (an undefined field is removed). */
function withSpec(value: { spec: object }, fields: Record<string, unknown>): unknown {
  const copy = structuredClone(value) as { spec: Record<string, unknown> }
  for (const [key, field] of Object.entries(fields)) {
    if (field === undefined) delete copy.spec[key]
    else copy.spec[key] = field
  }
  return copy
}

t.test('every GPUCellPool passes every admission rule, and one of them autoscales', async (t) => {
  const pools = ofKind<GPUCellPool>('GPUCellPool')
  t.ok(pools.length >= 2)
  for (const { file, meta, object } of pools) t.same(poolProblems(meta.name, object.spec), [], `${file}: ${meta.name}`)
  const autoscaling = pools.find((p) => p.object.spec.autoscaling?.enabled === true)
  t.ok(autoscaling, 'an autoscaling pool')
  t.ok(
    autoscaling?.object.spec.autoscaling?.scaleDown === 'Auto' && autoscaling.object.spec.autoscaling.minReplicas !== undefined,
    'it scales down too'
  )
})

t.test("each pool's join Secret renders for every cell, with node labels and taints", async (t) => {
  const secrets = examples.filter((d) => d.object.kind === 'Secret').map((d) => d.object)
  for (const { file, meta, object } of ofKind<GPUCellPool>('GPUCellPool')) {
    const pool = resolvePool(object.spec)
    const secret = secrets.find((s) => s.metadata.name === pool.joinSecretName && s.metadata.namespace === meta.namespace)
    const template = (secret?.stringData as Record<string, string> | undefined)?.[pool.joinSecretKey]
    t.type(template, 'string', `${file}: Secret ${pool.joinSecretName} has key ${pool.joinSecretKey}`)
    t.match(template, /\{\{ nodeLabels \}\}/, 'the template carries {{ nodeLabels }}')
    t.match(template, /\{\{ nodeTaints \}\}/, 'the template carries {{ nodeTaints }}')
    const rendered = renderBootstrap(template ?? '', bootstrapValues(meta.name, 'example-uid', pool, 0))
    t.ok('text' in rendered, `${file}: ${meta.name} renders`, { rendered })
    if ('text' in rendered) {
      t.notMatch(rendered.text, /\{\{/, 'no braces are left')
      t.match(rendered.text, `cells.kubeswift.io/pool-uid=example-uid`, 'the pool uid reaches --node-labels')
      t.notMatch(rendered.text, /node-role\.kubernetes\.io/, 'a label the kubelet may not set is not in --node-labels')
      const config: unknown = parse(rendered.text)
      t.ok(
        rendered.text.startsWith('#cloud-config\n') && typeof config === 'object' && config !== null,
        'the rendered text is a cloud-config YAML document'
      )
    }
  }
})

t.test("each pool's workload kubeconfig Secret carries the agent's opt-in label and the key", async (t) => {
  const secrets = examples.filter((d) => d.object.kind === 'Secret').map((d) => d.object)
  for (const { file, meta, object } of ofKind<GPUCellPool>('GPUCellPool')) {
    const pool = resolvePool(object.spec)
    const secret = secrets.find((s) => s.metadata.name === pool.workload.kubeconfigSecretName && s.metadata.namespace === meta.namespace)
    t.equal(secret?.metadata.labels?.[WORKLOAD_KUBECONFIG_LABEL], 'true', `${file}: ${pool.workload.kubeconfigSecretName} is labelled`)
    const kubeconfig = (secret?.stringData as Record<string, string> | undefined)?.[pool.workload.key] ?? ''
    t.match(kubeconfig, /kind: Config/, 'a kubeconfig under the key')
    t.notMatch(kubeconfig, /exec:|auth-provider:|tokenFile:|client-key:|certificate-authority:|proxy-url:/, 'only fields the agent accepts')
  }
})

t.test(
  'the Kueue examples: each InstanceType passes the schema, admits gpu-workspaces and names a LocalQueue defined beside it',
  async (t) => {
    const dir = join(EXAMPLES_DIR, 'kueue')
    const docs = readdirSync(dir)
      .filter((name) => name.endsWith('.yaml'))
      .sort()
      .flatMap((file) =>
        parseAllDocuments(readFileSync(join(dir, file), 'utf8'), { version: '1.1' }).map((d) => ({
          file,
          object: d.toJS() as Doc['object']
        }))
      )
    const types = docs.filter((d) => d.object.kind === 'InstanceType')
    t.equal(types.length, 2, 'a whole-GPU type and a HAMi type')
    const localQueues = docs.filter((d) => d.object.kind === 'LocalQueue').map((d) => d.object)
    const clusterQueues = docs.filter((d) => d.object.kind === 'ClusterQueue').map((d) => d.object)
    for (const { file, object } of types) {
      t.same(errorsOf(InstanceTypeSchema, object), [], `${file}: ${object.metadata.name}`)
      const spec = (object as unknown as InstanceType).spec
      const queue = localQueues.find((q) => q.metadata.name === spec.queue?.localQueueName)
      t.equal(queue?.metadata.namespace, NAMESPACE, `${file}: its LocalQueue is in ${NAMESPACE}`)
      const clusterQueue = clusterQueues.find(
        (q) => q.metadata.name === (queue?.spec as { clusterQueue?: string } | undefined)?.clusterQueue
      )
      t.ok(clusterQueue, `${file}: the LocalQueue points at a ClusterQueue defined beside it`)
      const covered = ((clusterQueue?.spec as { resourceGroups?: Array<{ coveredResources: string[] }> }).resourceGroups ?? []).flatMap(
        (g) => g.coveredResources
      )
      const needed =
        spec.devicePlugin === 'HAMi' ? ['nvidia.com/gpu', 'nvidia.com/gpucores', 'nvidia.com/gpumem-percentage'] : ['nvidia.com/gpu']
      for (const resource of ['cpu', 'memory', ...needed]) t.ok(covered.includes(resource), `${file}: the ClusterQueue covers ${resource}`)
    }
  }
)
