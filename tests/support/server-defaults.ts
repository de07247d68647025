/**
 * What the API server does to an object Metacontroller creates or updates, for the unit layer.
 *
 * Read from Kubernetes v1.37.2: `pkg/apis/core/v1/defaults.go` and its generated defaulters,
 * `pkg/apis/networking/v1/defaults.go`, the Service allocators (`pkg/registry/core/service/
 * storage/alloc.go`, `storage.go` `patchAllocatedValues`), the Pod strategy, and the admission
 * plugins enabled by default (ServiceAccount, Priority, DefaultTolerationSeconds). A field left
 * out here is a field the convergence properties cannot see, so the cluster layer stays the judge.
 * One file with {@link simulateMetacontroller} because the two are used together.
 */
import {
  applyUpdate,
  clone,
  deepEqual,
  isObject,
  setLastApplied,
  type Json,
  type JsonObject
} from './merge.ts'

/** Thrown where the API server would refuse the write. */
export class ServerError extends Error {
  constructor(
    /** The API `Status.reason`: `AlreadyExists`, `Invalid`, `Conflict`, ... */
    readonly reason: string,
    message: string
  ) {
    super(`${reason}: ${message}`)
    this.name = 'ServerError'
  }
}

/** Options for a {@link FakeServer}; everything it allocates follows from the seed. */
export interface FakeServerOptions {
  seed?: number
  /** The creation timestamp stamped on every object. */
  now?: string
  /** First address of the Service range; allocations are offsets from it (default 10.96.0.0). */
  serviceRangeStart?: string
}

/**
 * The server-side state a defaulting pass needs: a seeded random source (the real allocators are
 * random, so tests must not depend on an order), node ports in use, counters. Pass the same
 * instance through every step of a test.
 */
export class FakeServer {
  readonly now: string
  private state: number
  private version = 0
  private readonly nodePorts = new Map<number, string>()
  private readonly clusterIPs = new Set<string>()
  private readonly rangeStart: number

  constructor(options: FakeServerOptions = {}) {
    this.state = (options.seed ?? 1) >>> 0
    this.now = options.now ?? '2026-01-01T00:00:00Z'
    const [a = 10, b = 96, c = 0, d = 0] = (options.serviceRangeStart ?? '10.96.0.0').split('.').map(Number)
    this.rangeStart = ((a << 24) | (b << 16) | (c << 8) | d) >>> 0
  }

  /** Next value of a mulberry32 generator in [0, 1). */
  random(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  uid(): string {
    const hex = Array.from({ length: 32 }, () => Math.floor(this.random() * 16).toString(16)).join('')
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`
  }

  resourceVersion(): string {
    this.version += 1
    return String(this.version)
  }

  /** Five characters as `names.SimpleNameGenerator` picks them. */
  nameSuffix(): string {
    const alphabet = 'bcdfghjklmnpqrstvwxz2456789'
    return Array.from({ length: 5 }, () => alphabet[Math.floor(this.random() * alphabet.length)]).join('')
  }

  /** A free address of the Service range (never the range's first, which kube-apiserver keeps). */
  allocateClusterIP(): string {
    for (;;) {
      const n = this.rangeStart + 1 + Math.floor(this.random() * 4000)
      const ip = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')
      if (!this.clusterIPs.has(ip)) {
        this.clusterIPs.add(ip)
        return ip
      }
    }
  }

  /** Marks `port` as held by `owner`; refused when another object holds it. */
  reserveNodePort(port: number, owner: string): void {
    const holder = this.nodePorts.get(port)
    if (holder !== undefined && holder !== owner) {
      throw new ServerError('Invalid', `spec.ports.nodePort: Invalid value: ${port}: provided port is already allocated`)
    }
    this.nodePorts.set(port, owner)
  }

  /** A random free port of 30000-32767, held by `owner`. */
  allocateNodePort(owner: string): number {
    for (;;) {
      const port = 30000 + Math.floor(this.random() * 2768)
      if (!this.nodePorts.has(port)) {
        this.nodePorts.set(port, owner)
        return port
      }
    }
  }

  /** Frees every port `owner` holds except `keep`. */
  releaseNodePorts(owner: string, keep: readonly number[] = []): void {
    for (const [port, holder] of this.nodePorts) if (holder === owner && !keep.includes(port)) this.nodePorts.delete(port)
  }
}

/** `Kind.version` / `Kind.group/version`: the type key of a v2 request map. */
export function typeKey(obj: JsonObject): string {
  return `${String(obj.kind)}.${String(obj.apiVersion)}`
}

/** `namespace/name`, or `name` for a cluster-scoped object: the object key of a v2 request map. */
export function objectKey(obj: JsonObject): string {
  const meta = obj.metadata as JsonObject
  const ns = typeof meta.namespace === 'string' ? meta.namespace : ''
  return ns === '' ? String(meta.name) : `${ns}/${String(meta.name)}`
}

const obj = (parent: JsonObject, key: string): JsonObject => {
  if (!isObject(parent[key])) parent[key] = {}
  return parent[key] as JsonObject
}
const list = (parent: JsonObject, key: string): JsonObject[] =>
  Array.isArray(parent[key]) ? (parent[key] as Json[]).filter(isObject) : []
const setDefault = (target: JsonObject, key: string, value: Json): void => {
  if (target[key] === undefined || target[key] === null || target[key] === '') target[key] = value
}

/** The object as the server stores it after a create. Throws {@link ServerError} where it would refuse. */
export function defaultOnCreate(input: JsonObject, server: FakeServer): JsonObject {
  const out = clone(input)
  const meta = obj(out, 'metadata')
  meta.uid = server.uid()
  meta.resourceVersion = server.resourceVersion()
  meta.creationTimestamp = server.now
  meta.managedFields = [managedField(out, server)]
  dropEmptyMeta(meta)
  switch (typeKey(out)) {
    case 'Service.v1':
      delete out.status
      defaultService(out, undefined, server)
      out.status = { loadBalancer: {} }
      break
    case 'Pod.v1':
      meta.generation = 1
      defaultPod(out, undefined, server)
      out.status = { phase: 'Pending', qosClass: qosClass(obj(out, 'spec')) }
      break
    case 'NetworkPolicy.networking.k8s.io/v1':
      meta.generation = 1
      defaultNetworkPolicy(out)
      break
    case 'Secret.v1':
      defaultSecret(out)
      break
    case 'ConfigMap.v1':
      break
    case 'Namespace.v1':
      obj(meta, 'labels')['kubernetes.io/metadata.name'] = meta.name ?? null
      out.spec = { finalizers: ['kubernetes'] }
      out.status = { phase: 'Active' }
      break
    default:
      // A custom resource with a status subresource: status is dropped on create.
      meta.generation = 1
      delete out.status
  }
  if (BUILT_IN.has(typeKey(out))) dropEmptyFields(out)
  return out
}

/**
 * The object as the server stores it after an update (PUT) of `old` with `input`: defaults
 * applied again, allocations carried over, status and identity kept, resourceVersion moved only
 * when something changed, generation bumped when the spec changed for kinds that have one.
 */
export function defaultOnUpdate(old: JsonObject, input: JsonObject, server: FakeServer): JsonObject {
  const out = clone(input)
  const meta = obj(out, 'metadata')
  const oldMeta = old.metadata as JsonObject
  if (meta.resourceVersion !== undefined && meta.resourceVersion !== oldMeta.resourceVersion) {
    throw new ServerError('Conflict', `the object has been modified; please apply your changes to the latest version`)
  }
  for (const field of ['uid', 'creationTimestamp', 'generation', 'managedFields', 'resourceVersion']) {
    if (oldMeta[field] === undefined) delete meta[field]
    else meta[field] = clone(oldMeta[field] as Json)
  }
  dropEmptyMeta(meta)
  if (old.status === undefined) delete out.status
  else out.status = clone(old.status)
  switch (typeKey(out)) {
    case 'Service.v1':
      defaultService(out, old, server)
      break
    case 'Pod.v1':
      defaultPod(out, old, server)
      break
    case 'NetworkPolicy.networking.k8s.io/v1':
      defaultNetworkPolicy(out)
      break
    case 'Secret.v1':
      defaultSecret(out)
      break
  }
  if (BUILT_IN.has(typeKey(out))) dropEmptyFields(out)
  if (deepEqual(out, old)) return out
  const body = (o: JsonObject): JsonObject => Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'metadata' && k !== 'status'))
  if (typeof oldMeta.generation === 'number' && !deepEqual(body(out), body(old))) meta.generation = oldMeta.generation + 1
  meta.resourceVersion = server.resourceVersion()
  meta.managedFields = [managedField(out, server)]
  return out
}

const BUILT_IN = new Set(['Service.v1', 'Pod.v1', 'Secret.v1', 'ConfigMap.v1', 'Namespace.v1', 'NetworkPolicy.networking.k8s.io/v1'])
// Lists of these kinds that are not omitempty: stored empty, they read back as [].
const KEEP_EMPTY_LISTS = new Set(['containers', 'sources', 'nodeSelectorTerms'])
// Map-typed fields (all omitempty); an empty {} elsewhere is a struct and stays (podSelector: {}).
const MAP_FIELDS = new Set(['labels', 'annotations', 'selector', 'nodeSelector', 'matchLabels', 'data', 'binaryData', 'limits', 'requests', 'overhead'])

// Encoding a built-in type: nulls, empty omitempty lists and empty maps read back absent, so an
// answer carrying one differs from the stored object on every sync.
function dropEmptyFields(value: Json): void {
  if (Array.isArray(value)) {
    for (const item of value) dropEmptyFields(item)
    return
  }
  if (!isObject(value)) return
  for (const [key, v] of Object.entries(value)) {
    if (v === null || (Array.isArray(v) && v.length === 0 && !KEEP_EMPTY_LISTS.has(key)) || (isObject(v) && Object.keys(v).length === 0 && MAP_FIELDS.has(key))) {
      delete value[key]
    } else dropEmptyFields(v)
  }
}

// ObjectMeta's maps and lists are omitempty: stored empty, they read back absent (CRs too).
function dropEmptyMeta(meta: JsonObject): void {
  for (const key of ['labels', 'annotations', 'finalizers', 'ownerReferences']) {
    const v = meta[key]
    if (v === null || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0)) delete meta[key]
  }
}

function managedField(o: JsonObject, server: FakeServer): JsonObject {
  return { manager: 'metacontroller', operation: 'Update', apiVersion: o.apiVersion ?? 'v1', time: server.now, fieldsType: 'FieldsV1', fieldsV1: {} }
}

function defaultSecret(secret: JsonObject): void {
  setDefault(secret, 'type', 'Opaque')
  // stringData is write-only: merged into data (base64) and never stored.
  if (isObject(secret.stringData)) {
    const data = obj(secret, 'data')
    for (const [k, v] of Object.entries(secret.stringData)) data[k] = Buffer.from(String(v)).toString('base64')
  }
  delete secret.stringData
}

function defaultNetworkPolicy(policy: JsonObject): void {
  const spec = obj(policy, 'spec')
  for (const rule of [...list(spec, 'ingress'), ...list(spec, 'egress')]) {
    for (const port of list(rule, 'ports')) setDefault(port, 'protocol', 'TCP')
  }
  if (!Array.isArray(spec.policyTypes) || spec.policyTypes.length === 0) {
    spec.policyTypes = Array.isArray(spec.egress) && spec.egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress']
  }
}

function defaultService(svc: JsonObject, old: JsonObject | undefined, server: FakeServer): void {
  const spec = obj(svc, 'spec')
  const oldSpec = old === undefined ? undefined : (old.spec as JsonObject)
  setDefault(spec, 'sessionAffinity', 'None')
  if (spec.sessionAffinity === 'None') delete spec.sessionAffinityConfig
  setDefault(spec, 'type', 'ClusterIP')
  const ports = list(spec, 'ports')
  for (const port of ports) {
    setDefault(port, 'protocol', 'TCP')
    if (port.targetPort === undefined || port.targetPort === 0 || port.targetPort === '') port.targetPort = port.port ?? 0
  }
  validateServicePorts(ports)
  const external = spec.type === 'NodePort' || spec.type === 'LoadBalancer' || (spec.type === 'ClusterIP' && list(spec, 'externalIPs').length > 0)
  // dropTypeDependentFields: leaving NodePort drops the policy and node ports that were only inherited.
  if (!external && oldSpec !== undefined && spec.externalTrafficPolicy === oldSpec.externalTrafficPolicy) delete spec.externalTrafficPolicy
  if (external) setDefault(spec, 'externalTrafficPolicy', 'Cluster')
  if (['NodePort', 'LoadBalancer', 'ClusterIP'].includes(String(spec.type))) setDefault(spec, 'internalTrafficPolicy', 'Cluster')
  if (spec.type === 'LoadBalancer') setDefault(spec, 'allocateLoadBalancerNodePorts', true)
  if (spec.type === 'ExternalName') return
  if (oldSpec !== undefined) {
    setDefault(spec, 'clusterIP', oldSpec.clusterIP ?? '')
    if (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0) spec.clusterIPs = clone(oldSpec.clusterIPs ?? null)
    setDefault(spec, 'ipFamilies', clone(oldSpec.ipFamilies ?? null))
    setDefault(spec, 'ipFamilyPolicy', oldSpec.ipFamilyPolicy ?? null)
  }
  if (typeof spec.clusterIP !== 'string' || spec.clusterIP === '') spec.clusterIP = server.allocateClusterIP()
  if (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0) spec.clusterIPs = [spec.clusterIP as string]
  setDefault(spec, 'ipFamilies', ['IPv4'])
  setDefault(spec, 'ipFamilyPolicy', 'SingleStack')
  nodePorts(svc, ports, oldSpec, server)
}

// ValidateService: several ports need unique names, and (protocol, port) appears once.
function validateServicePorts(ports: JsonObject[]): void {
  const names = new Set<string>()
  const keys = new Set<string>()
  ports.forEach((p, i) => {
    const name = typeof p.name === 'string' ? p.name : ''
    if (ports.length > 1 && name === '') throw new ServerError('Invalid', `spec.ports[${i}].name: Required value`)
    if (ports.length > 1 && names.has(name)) throw new ServerError('Invalid', `spec.ports[${i}].name: Duplicate value: "${name}"`)
    names.add(name)
    const key = `${String(p.protocol)}/${String(p.port)}`
    if (keys.has(key)) throw new ServerError('Invalid', `spec.ports[${i}]: Duplicate value: ${key}`)
    keys.add(key)
  })
}

function nodePorts(svc: JsonObject, ports: JsonObject[], oldSpec: JsonObject | undefined, server: FakeServer): void {
  const spec = svc.spec as JsonObject
  const owner = objectKey(svc)
  const allocates = spec.type === 'NodePort' || (spec.type === 'LoadBalancer' && spec.allocateLoadBalancerNodePorts === true)
  const oldPorts = oldSpec === undefined ? [] : list(oldSpec, 'ports')
  const oldNumbers = oldPorts.map((p) => p.nodePort).filter((n): n is number => typeof n === 'number' && n > 0)
  if (!allocates) {
    // Node ports kept from a NodePort past are dropped; a new explicit one is refused.
    for (const port of ports) {
      if (port.nodePort === undefined || port.nodePort === 0) delete port.nodePort
      else if (oldNumbers.includes(port.nodePort as number)) delete port.nodePort
      else throw new ServerError('Invalid', `spec.ports.nodePort: Forbidden: may not be used when \`type\` is '${String(spec.type)}'`)
    }
    server.releaseNodePorts(owner)
    return
  }
  if (oldSpec !== undefined) {
    // patchAllocatedValues: an omitted node port is carried over by port name, unless reused.
    const used = new Set(ports.map((p) => p.nodePort).filter((n) => typeof n === 'number' && n > 0 && oldNumbers.includes(n)))
    const byName = new Map(oldPorts.map((p) => [String(p.name ?? ''), p.nodePort]))
    for (const port of ports) {
      const carried = byName.get(String(port.name ?? ''))
      if ((port.nodePort ?? 0) === 0 && typeof carried === 'number' && !used.has(carried)) port.nodePort = carried
    }
  }
  const byServicePort = new Map<Json | undefined, number>()
  for (const port of ports) {
    const requested = typeof port.nodePort === 'number' && port.nodePort > 0 ? port.nodePort : undefined
    // On create, entries sharing a port number share one node port (initNodePorts).
    const shared = oldSpec === undefined ? byServicePort.get(port.port) : undefined
    if (requested !== undefined) server.reserveNodePort(requested, owner)
    port.nodePort = requested ?? shared ?? server.allocateNodePort(owner)
    byServicePort.set(port.port, port.nodePort)
  }
  server.releaseNodePorts(owner, ports.map((p) => p.nodePort as number))
}

function defaultPod(pod: JsonObject, old: JsonObject | undefined, server: FakeServer): void {
  const spec = obj(pod, 'spec')
  setDefault(spec, 'serviceAccountName', spec.serviceAccount ?? '')
  if (spec.serviceAccountName === '') delete spec.serviceAccountName
  setDefault(spec, 'dnsPolicy', 'ClusterFirst')
  setDefault(spec, 'restartPolicy', 'Always')
  if (!isObject(spec.securityContext)) spec.securityContext = {}
  setDefault(spec, 'terminationGracePeriodSeconds', 30)
  setDefault(spec, 'schedulerName', 'default-scheduler')
  if (typeof spec.enableServiceLinks !== 'boolean') spec.enableServiceLinks = true
  for (const c of [...list(spec, 'containers'), ...list(spec, 'initContainers')]) defaultContainer(c, spec.hostNetwork === true)
  for (const v of list(spec, 'volumes')) defaultVolume(v)
  if (old === undefined) {
    admitServiceAccount(spec, server)
    if (spec.priorityClassName === undefined || spec.priorityClassName === '') {
      setDefault(spec, 'priority', 0)
      setDefault(spec, 'preemptionPolicy', 'PreemptLowerPriority')
    }
  } else {
    const oldSpec = old.spec as JsonObject
    for (const f of ['priority', 'preemptionPolicy']) if (spec[f] === undefined && oldSpec[f] !== undefined) spec[f] = clone(oldSpec[f] as Json)
  }
  if (typeof spec.serviceAccountName === 'string') spec.serviceAccount = spec.serviceAccountName
  admitDefaultTolerationSeconds(spec)
  if (old !== undefined) checkPodUpdate(old.spec as JsonObject, spec)
}

function defaultContainer(c: JsonObject, hostNetwork: boolean): void {
  const image = String(c.image ?? '')
  const lastPart = image.split('@')[0]?.split('/').pop() ?? ''
  const tag = lastPart.includes(':') ? lastPart.split(':').pop() : image.includes('@') ? '' : 'latest'
  setDefault(c, 'imagePullPolicy', tag === 'latest' ? 'Always' : 'IfNotPresent')
  setDefault(c, 'terminationMessagePath', '/dev/termination-log')
  setDefault(c, 'terminationMessagePolicy', 'File')
  const resources = obj(c, 'resources')
  if (isObject(resources.limits)) {
    const requests = obj(resources, 'requests')
    for (const [k, v] of Object.entries(resources.limits)) if (requests[k] === undefined) requests[k] = v
  }
  for (const port of list(c, 'ports')) {
    setDefault(port, 'protocol', 'TCP')
    if (hostNetwork) setDefault(port, 'hostPort', port.containerPort ?? 0)
  }
  for (const env of list(c, 'env')) {
    if (isObject(env.valueFrom) && isObject(env.valueFrom.fieldRef)) setDefault(env.valueFrom.fieldRef, 'apiVersion', 'v1')
  }
  for (const key of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    const probe = c[key]
    if (!isObject(probe)) continue
    for (const [f, v] of [['timeoutSeconds', 1], ['periodSeconds', 10], ['successThreshold', 1], ['failureThreshold', 3]] as const) {
      if (probe[f] === undefined || probe[f] === 0) probe[f] = v
    }
    if (isObject(probe.httpGet)) {
      setDefault(probe.httpGet, 'path', '/')
      setDefault(probe.httpGet, 'scheme', 'HTTP')
    }
  }
}

function defaultVolume(v: JsonObject): void {
  const sources = Object.keys(v).filter((k) => k !== 'name')
  if (sources.length === 0) v.emptyDir = {}
  if (isObject(v.hostPath) && v.hostPath.type === undefined) v.hostPath.type = ''
  for (const k of ['secret', 'configMap', 'downwardAPI', 'projected']) if (isObject(v[k])) setDefault(v[k] as JsonObject, 'defaultMode', 420)
  if (isObject(v.projected)) {
    for (const source of list(v.projected, 'sources')) {
      if (isObject(source.serviceAccountToken)) setDefault(source.serviceAccountToken, 'expirationSeconds', 3600)
    }
  }
}

// ServiceAccount admission, on create: the `default` account and its token volume in every container.
function admitServiceAccount(spec: JsonObject, server: FakeServer): void {
  setDefault(spec, 'serviceAccountName', 'default')
  if (spec.automountServiceAccountToken === false) return
  const mountPath = '/var/run/secrets/kubernetes.io/serviceaccount'
  const existing = list(spec, 'volumes').find((v) => String(v.name).startsWith('kube-api-access-'))
  const name = existing === undefined ? `kube-api-access-${server.nameSuffix()}` : String(existing.name)
  let needed = false
  for (const c of [...list(spec, 'initContainers'), ...list(spec, 'containers')]) {
    const mounts = list(c, 'volumeMounts')
    if (mounts.some((m) => m.mountPath === mountPath)) continue
    c.volumeMounts = [...mounts, { name, readOnly: true, mountPath }]
    needed = true
  }
  if (existing !== undefined || !needed) return
  spec.volumes = [
    ...list(spec, 'volumes'),
    {
      name,
      projected: {
        defaultMode: 420,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } }
        ]
      }
    }
  ]
}

// DefaultTolerationSeconds admission, on create and update: appended unless a toleration covers it.
function admitDefaultTolerationSeconds(spec: JsonObject): void {
  const tolerations = list(spec, 'tolerations')
  const covers = (key: string): boolean =>
    tolerations.some((t) => (t.key === key || t.key === undefined || t.key === '') && (t.effect === 'NoExecute' || t.effect === undefined || t.effect === ''))
  const added = ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']
    .filter((key) => !covers(key))
    .map((key) => ({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }))
  if (added.length > 0) spec.tolerations = [...tolerations, ...added]
}

// Pod updates may change images, activeDeadlineSeconds, terminationGracePeriodSeconds and add tolerations.
function checkPodUpdate(oldSpec: JsonObject, spec: JsonObject): void {
  const strip = (s: JsonObject): JsonObject => {
    const c = clone(s)
    for (const k of ['containers', 'initContainers']) for (const container of list(c, k)) delete container.image
    delete c.activeDeadlineSeconds
    delete c.terminationGracePeriodSeconds
    delete c.tolerations
    return c
  }
  const kept = list(oldSpec, 'tolerations').every((t) => list(spec, 'tolerations').some((n) => deepEqual({ ...n, tolerationSeconds: null }, { ...t, tolerationSeconds: null })))
  if (!kept || !deepEqual(strip(oldSpec), strip(spec))) {
    throw new ServerError('Invalid', 'spec: Forbidden: pod updates may not change fields other than images, activeDeadlineSeconds, terminationGracePeriodSeconds or additions to tolerations')
  }
}

function qosClass(spec: JsonObject): string {
  const containers = [...list(spec, 'containers'), ...list(spec, 'initContainers')]
  const res = (c: JsonObject, k: string): JsonObject => (isObject(c.resources) && isObject(c.resources[k]) ? (c.resources[k] as JsonObject) : {})
  const compute = (m: JsonObject): string[] => Object.keys(m).filter((k) => k === 'cpu' || k === 'memory')
  if (containers.every((c) => compute(res(c, 'requests')).length === 0 && compute(res(c, 'limits')).length === 0)) return 'BestEffort'
  const guaranteed = containers.every((c) => {
    const limits = res(c, 'limits')
    const requests = res(c, 'requests')
    return ['cpu', 'memory'].every((k) => limits[k] !== undefined && (requests[k] === undefined || requests[k] === limits[k]))
  })
  return guaranteed ? 'Guaranteed' : 'Burstable'
}


/** A child update method of a CompositeController or DecoratorController. */
export type UpdateMethod = 'OnDelete' | 'Recreate' | 'InPlace' | 'RollingRecreate' | 'RollingInPlace'
/** Objects keyed by type key, then object key: the v2 `children` / `attachments` shape. */
export type ObjectsByType = Record<string, Record<string, JsonObject>>

/** One pass of Metacontroller's child management, as {@link simulateMetacontroller} takes it. */
export interface SimulateInput {
  /** The parent (composite) or decorated object: its uid, namespace, apiVersion, kind and name. */
  parent: JsonObject
  /** The owned children the hook was shown. */
  observed: ObjectsByType
  /** The hook's `children` (or `attachments`). */
  desired: readonly JsonObject[]
  /** Update method per type key (`Service.v1`); a type not listed is `OnDelete`, as in Metacontroller. */
  methods: Readonly<Record<string, UpdateMethod>>
  server: FakeServer
  /** Composite with `generateSelector: true` (the default here): adds the `controller-uid` label. */
  generateSelector?: boolean
  /** Set for a DecoratorController: its name goes into the decorator annotation instead. */
  decorator?: string
  /** Same-named objects in the cluster that Metacontroller does not own: creating one is refused. */
  foreign?: ObjectsByType
}

/** The result of one simulated pass. */
export interface SimulateResult {
  /** The owned children the next hook request would show. */
  observed: ObjectsByType
  /** Requests that changed something (create, update, delete): a converged pass has none. */
  writes: number
  /** What happened, in order, e.g. `update Service.v1 ns/web`, `create refused (AlreadyExists) ...`. */
  operations: string[]
}

/** Annotation by which a DecoratorController recognises its attachments. */
export const DECORATOR_ANNOTATION = 'metacontroller.k8s.io/decorator-controller'

/**
 * Metacontroller's apply of one hook answer (`ManageChildren` with the default dynamic apply),
 * with {@link defaultOnCreate}/{@link defaultOnUpdate} standing in for the API server. Throws,
 * after doing what it could, when Metacontroller would report the sync as failed.
 */
export function simulateMetacontroller(input: SimulateInput): SimulateResult {
  const parentMeta = input.parent.metadata as JsonObject
  const parentUid = String(parentMeta.uid)
  const desired = new Map<string, Map<string, JsonObject>>()
  for (const child of input.desired) {
    const c = prepareDesired(child, input)
    const byKey = desired.get(typeKey(c)) ?? new Map<string, JsonObject>()
    byKey.set(objectKey(c), c)
    desired.set(typeKey(c), byKey)
  }
  const next: ObjectsByType = {}
  for (const type of new Set([...Object.keys(input.methods), ...Object.keys(input.observed)])) next[type] = clone(input.observed[type] ?? {})
  for (const group of [input.observed, input.foreign ?? {}]) {
    for (const [type, objects] of Object.entries(group)) {
      if (type !== 'Service.v1') continue
      for (const [key, svc] of Object.entries(objects)) {
        for (const p of list(obj(clone(svc), 'spec'), 'ports')) if (typeof p.nodePort === 'number') input.server.reserveNodePort(p.nodePort, key)
      }
    }
  }
  const operations: string[] = []
  const errors: string[] = []
  let writes = 0
  const remove = (type: string, key: string, what: string): void => {
    delete (next[type] as Record<string, JsonObject>)[key]
    if (type === 'Service.v1') input.server.releaseNodePorts(key)
    operations.push(`${what} ${type} ${key}`)
    writes += 1
  }
  for (const type of Object.keys(input.observed).sort()) {
    for (const [key, o] of Object.entries(input.observed[type] ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
      if (!isDeleting(o) && desired.get(type)?.get(key) === undefined) remove(type, key, 'delete')
    }
  }
  for (const type of [...desired.keys()].sort()) {
    next[type] ??= {}
    for (const [key, want] of [...(desired.get(type) ?? new Map<string, JsonObject>())].sort(([a], [b]) => a.localeCompare(b))) {
      const have = input.observed[type]?.[key]
      try {
        if (have === undefined) {
          if (input.foreign?.[type]?.[key] !== undefined) {
            operations.push(`create refused (AlreadyExists) ${type} ${key}`)
            continue
          }
          const record = setLastApplied(want, want)
          const refs = list(obj(record, 'metadata'), 'ownerReferences')
          if (!refs.some((r) => r.uid === parentUid)) (record.metadata as JsonObject).ownerReferences = [...refs, controllerRef(input.parent)]
          ;(next[type] as Record<string, JsonObject>)[key] = defaultOnCreate(record, input.server)
          operations.push(`create ${type} ${key}`)
          writes += 1
          continue
        }
        const { object, changed } = applyUpdate(have, want)
        if (!changed || isDeleting(have)) continue
        const method = input.methods[type] ?? 'OnDelete'
        if (method === 'OnDelete') operations.push(`unchanged (OnDelete) ${type} ${key}`)
        else if (method === 'Recreate' || method === 'RollingRecreate') remove(type, key, 'delete (Recreate)')
        else {
          ;(next[type] as Record<string, JsonObject>)[key] = defaultOnUpdate(have, object, input.server)
          operations.push(`update ${type} ${key}`)
          writes += 1
        }
      } catch (err) {
        errors.push(`${type} ${key}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
  }
  const result = { observed: next, writes, operations }
  if (errors.length > 0) throw Object.assign(new Error(`sync failed:\n${errors.join('\n')}`), { result })
  return result
}

/** The controller ownerReference Metacontroller sets on what it creates (`MakeControllerRef`). */
export function controllerRef(parent: JsonObject): JsonObject {
  const meta = parent.metadata as JsonObject
  return { apiVersion: parent.apiVersion ?? null, kind: parent.kind ?? null, name: meta.name ?? null, uid: meta.uid ?? null, controller: true, blockOwnerDeletion: true }
}

const isDeleting = (o: JsonObject): boolean => isObject(o.metadata) && typeof o.metadata.deletionTimestamp === 'string'

// What Metacontroller adds to an answered child before applying it, so it is in the record too:
// the parent's namespace when none is set, then the selector label or the decorator annotation.
function prepareDesired(child: JsonObject, input: SimulateInput): JsonObject {
  const c = clone(child)
  const meta = obj(c, 'metadata')
  const parentMeta = input.parent.metadata as JsonObject
  if (typeof meta.namespace !== 'string' || meta.namespace === '') {
    if (typeof parentMeta.namespace === 'string' && parentMeta.namespace !== '') meta.namespace = parentMeta.namespace
    else delete meta.namespace
  }
  if (input.decorator !== undefined) {
    obj(meta, 'annotations')[DECORATOR_ANNOTATION] = input.decorator
  } else if (input.generateSelector !== false) {
    const labels = obj(meta, 'labels')
    labels['controller-uid'] ??= String(parentMeta.uid)
    if (labels['controller-uid'] !== parentMeta.uid) throw new Error(`labels on desired child ${typeKey(c)} ${objectKey(c)} don't match parent selector`)
  }
  return c
}
