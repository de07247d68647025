/**
 * The Instance's NodePort Service (docs/instance.md, "The Service").
 *
 * A port is identified by (port, protocol). The desired Service carries `nodePort` for every
 * entry whose identity already has one on the observed Service, so an unchanged port keeps its
 * node port by construction, whatever Metacontroller's merge or the API server would otherwise do.
 * Entry names follow the identity (`tcp-8888`, `ssh`), never the user's label: the API server
 * hands an omitted node port the old node port of a same-named port, so a name that moved from one
 * identity to another would carry an allocation with it.
 *
 * Choices where the spec is silent:
 * - Port order: `spec.ports` order, a 22/TCP entry folded into the SSH entry, `ssh` last. A stopped
 *   Service keeps the observed order (Metacontroller's list merge keeps observed order anyway).
 * - Written defaults: `protocol` and `targetPort` (an integer) in every entry, `sessionAffinity:
 *   None` and `internalTrafficPolicy: Cluster` (the API server's defaults for a NodePort Service,
 *   `SetDefaults_Service` in pkg/apis/core/v1/defaults.go). `clusterIP(s)`, `ipFamilies` and
 *   `ipFamilyPolicy` are left to the API server (allocations; a create defaults the policy to
 *   SingleStack in pkg/registry/core/service/storage/alloc.go): keys we never set survive the 3-way
 *   merge, so an admin may switch the Service to dual-stack. `allocateLoadBalancerNodePorts` and
 *   `healthCheckNodePort` apply to LoadBalancer Services only and are not written.
 * - Labels: part-of and managed-by. The selector is part-of plus the resource type, exactly the
 *   Pod's, so the Service routes across Pod replacement and a change of type.
 */
import { SSH_PORT_NAME } from '../api/instance.ts'
import { MANAGED_BY, MANAGED_BY_LABEL, PART_OF_LABEL } from '../k8s/labels.ts'
import { isRecord, type KubeObject } from '../k8s/objects.ts'
import { SSH_PORT, instanceSelector } from './labels.ts'
import { isSshPort, portIdentity, protocolOf } from './ports.ts'
import type { ResolvedSpec } from './validate.ts'

/** What the Service is built from. */
export interface ServiceInput {
  /** The Instance's name, which the Service takes. */
  name: string
  namespace: string
  /** The resolved spec; only `ports` and `stop` are read. */
  spec: Pick<ResolvedSpec, 'ports' | 'stop'>
  /** True when the SSH sidecar is on: the Service then carries `ssh` (22/TCP). */
  ssh: boolean
  /** The observed Service of this Instance (a child), if any. */
  observed: KubeObject | undefined
}

/** One entry of the desired Service's `ports`, keys in the order written. */
export interface ServicePortEntry {
  name: string
  port: number
  protocol: string
  targetPort: number
  nodePort?: number
}

/** A port identity with the naming decided: `ssh` marks the SSH sidecar's 22/TCP. */
interface PortIdentity {
  port: number
  protocol: string
  ssh: boolean
}

/** The Service port name of an identity: `ssh` for the sidecar, else `<protocol lower>-<port>`. */
export function servicePortName(port: number, protocol: string, ssh: boolean): string {
  return ssh ? SSH_PORT_NAME : `${protocol.toLowerCase()}-${port}`
}

/** One port of an observed Service, protocol defaulted to TCP as the API server does. */
export interface ObservedServicePort {
  name?: string
  port: number
  protocol: string
  nodePort?: number
}

/** The ports of an observed Service in its order; entries without a numeric port are skipped. */
export function observedServicePorts(observed: KubeObject | undefined): ObservedServicePort[] {
  const spec = observed?.spec
  if (!isRecord(spec) || !Array.isArray(spec.ports)) return []
  const out: ObservedServicePort[] = []
  for (const item of spec.ports as unknown[]) {
    if (!isRecord(item) || typeof item.port !== 'number') continue
    const entry: ObservedServicePort = {
      port: item.port,
      protocol: protocolOf(item)
    }
    if (typeof item.name === 'string' && item.name !== '') entry.name = item.name
    if (typeof item.nodePort === 'number' && item.nodePort > 0) entry.nodePort = item.nodePort
    out.push(entry)
  }
  return out
}

/** Node ports of the observed Service by identity (`8888/TCP` → 31234); the first entry wins. */
export function observedNodePorts(observed: KubeObject | undefined): Map<string, number> {
  const out = new Map<string, number>()
  for (const p of observedServicePorts(observed)) {
    const key = portIdentity(p.port, p.protocol)
    if (p.nodePort !== undefined && !out.has(key)) out.set(key, p.nodePort)
  }
  return out
}

/**
 * The identities a running Instance exposes: `spec.ports` in order, then `ssh` when SSH is on. A
 * spec entry 22/TCP with SSH on is the SSH port itself, so it becomes the one `ssh` entry.
 */
export function runningPortIdentities(ports: ResolvedSpec['ports'], ssh: boolean): PortIdentity[] {
  const out: PortIdentity[] = []
  const seen = new Set<string>()
  for (const p of ports) {
    if (ssh && isSshPort(p)) continue
    const key = portIdentity(p.port, p.protocol)
    if (seen.has(key)) continue
    seen.add(key)
    out.push({ port: p.port, protocol: p.protocol, ssh: false })
  }
  if (ssh) out.push({ port: SSH_PORT, protocol: 'TCP', ssh: true })
  return out
}

/**
 * The identities a stopped Instance keeps: exactly the observed Service's, in its order, whatever
 * `spec.ports` says now (edits apply at the next start). An observed `ssh` entry stays `ssh`.
 */
export function stoppedPortIdentities(observed: KubeObject | undefined): PortIdentity[] {
  const out: PortIdentity[] = []
  const seen = new Set<string>()
  for (const p of observedServicePorts(observed)) {
    const key = portIdentity(p.port, p.protocol)
    if (seen.has(key)) continue
    seen.add(key)
    const ssh = p.name === SSH_PORT_NAME && p.port === SSH_PORT && p.protocol === 'TCP'
    out.push({ port: p.port, protocol: p.protocol, ssh })
  }
  return out
}

/** The desired `ports` entries: identity-named, target = port, observed node ports carried. */
export function servicePortEntries(identities: readonly PortIdentity[], nodePorts: ReadonlyMap<string, number>): ServicePortEntry[] {
  return identities.map((id) => {
    const entry: ServicePortEntry = {
      name: servicePortName(id.port, id.protocol, id.ssh),
      port: id.port,
      protocol: id.protocol,
      targetPort: id.port
    }
    const nodePort = nodePorts.get(portIdentity(id.port, id.protocol))
    if (nodePort !== undefined) entry.nodePort = nodePort
    return entry
  })
}

/**
 * The Instance's Service, or undefined when there should be none: running with no port at all
 * (leaving it out deletes it with its allocations), or stopped with no Service observed.
 */
export function buildService(input: ServiceInput): KubeObject | undefined {
  const identities = input.spec.stop ? stoppedPortIdentities(input.observed) : runningPortIdentities(input.spec.ports, input.ssh)
  if (identities.length === 0) return undefined
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: { [PART_OF_LABEL]: input.name, [MANAGED_BY_LABEL]: MANAGED_BY }
    },
    spec: {
      type: 'NodePort',
      // Local keeps the client's address (the isolation policy admits "outside the pod CIDRs");
      // the address to use is the Pod's host IP, reported in status.accessAddresses.
      externalTrafficPolicy: 'Local',
      internalTrafficPolicy: 'Cluster',
      sessionAffinity: 'None',
      selector: instanceSelector(input.name),
      ports: servicePortEntries(identities, observedNodePorts(input.observed))
    }
  }
}
