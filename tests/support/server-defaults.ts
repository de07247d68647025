/**
 * What the API server does to an object Metacontroller creates or updates, for the unit layer.
 *
 * Read from Kubernetes v1.37.2: `pkg/apis/core/v1/defaults.go` and its generated defaulters,
 * `pkg/apis/networking/v1/defaults.go`, and the Service allocators (`pkg/registry/core/service/
 * storage/alloc.go`, `storage.go` `patchAllocatedValues`); Pods are defaulted in pod-defaults.ts,
 * and the allocators' state lives in a {@link FakeServer}. A field left out here is a field the
 * convergence properties cannot see, so the cluster layer stays the judge.
 */
import { clone, deepEqual, isObject, type Json, type JsonObject } from './merge.ts'
import { objectKey, typeKey } from './children.ts'
import { ServerError, type FakeServer } from './fake-server.ts'
import { list, obj, setDefault } from './fields.ts'
import { defaultPod, qosClass } from './pod-defaults.ts'

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
    case 'PersistentVolumeClaim.v1':
      // The storage protection admission plugin's finalizer, the defaulted volumeMode; the claim
      // waits for a volume (the binder is not played here).
      meta.finalizers = ['kubernetes.io/pvc-protection']
      setDefault(obj(out, 'spec'), 'volumeMode', 'Filesystem')
      out.status = { phase: 'Pending' }
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
    else meta[field] = clone(oldMeta[field])
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
    case 'PersistentVolumeClaim.v1':
      setDefault(obj(out, 'spec'), 'volumeMode', 'Filesystem')
      break
    case 'Namespace.v1':
      // The Namespace strategy's Canonicalize sets the name label on every update too.
      obj(meta, 'labels')['kubernetes.io/metadata.name'] = meta.name ?? null
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

const BUILT_IN = new Set([
  'Service.v1',
  'Pod.v1',
  'Secret.v1',
  'ConfigMap.v1',
  'Namespace.v1',
  'NetworkPolicy.networking.k8s.io/v1',
  'PersistentVolumeClaim.v1'
])
// Lists of these kinds that are not omitempty: stored empty, they read back as [].
const KEEP_EMPTY_LISTS = new Set(['containers', 'sources', 'nodeSelectorTerms'])
// Map-typed fields (all omitempty); an empty {} elsewhere is a struct and stays (podSelector: {}).
const MAP_FIELDS = new Set([
  'labels',
  'annotations',
  'selector',
  'nodeSelector',
  'matchLabels',
  'data',
  'binaryData',
  'limits',
  'requests',
  'overhead'
])

// Encoding a built-in type: nulls, empty omitempty lists and empty maps read back absent, so an
// answer carrying one differs from the stored object on every sync.
function dropEmptyFields(value: Json): void {
  if (Array.isArray(value)) {
    for (const item of value) dropEmptyFields(item)
    return
  }
  if (!isObject(value)) return
  for (const [key, v] of Object.entries(value)) {
    if (
      v === null ||
      (Array.isArray(v) && v.length === 0 && !KEEP_EMPTY_LISTS.has(key)) ||
      (isObject(v) && Object.keys(v).length === 0 && MAP_FIELDS.has(key))
    ) {
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
  return {
    manager: 'metacontroller',
    operation: 'Update',
    apiVersion: o.apiVersion ?? 'v1',
    time: server.now,
    fieldsType: 'FieldsV1',
    fieldsV1: {}
  }
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
  const external =
    spec.type === 'NodePort' || spec.type === 'LoadBalancer' || (spec.type === 'ClusterIP' && list(spec, 'externalIPs').length > 0)
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
  if (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0) spec.clusterIPs = [spec.clusterIP]
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
  server.releaseNodePorts(
    owner,
    ports.map((p) => p.nodePort as number)
  )
}
