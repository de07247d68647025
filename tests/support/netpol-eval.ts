/**
 * A small NetworkPolicy evaluator with the standard Kubernetes semantics, for tests that ask
 * "does this policy let A talk to B?" without a CNI.
 *
 * - A Pod is isolated for a direction when some policy of its namespace selects it (podSelector)
 *   and lists that direction in `policyTypes` (defaulted as the API server does: Ingress, plus
 *   Egress when the policy has egress rules). An isolated Pod admits traffic in that direction
 *   only if some rule of some selecting policy admits the peer and the port; a Pod no policy
 *   isolates admits everything.
 * - A connection needs both ends: the source Pod's egress (when the source is a Pod) and the
 *   destination Pod's ingress (when the destination is a Pod). Replies of an admitted connection
 *   are not evaluated (CNIs track connections).
 * - Peers: `podSelector` alone means Pods of the policy's namespace; `namespaceSelector` alone means
 *   every Pod of the matching namespaces; both together, Pods matching both; `ipBlock` matches any
 *   endpoint by address, Pods included (Calico's reading and the strictest for an isolation test;
 *   Cilium matches ipBlock only for endpoints outside the cluster). An empty or absent peer list
 *   admits every peer; an empty or absent port list admits every port.
 * - Ports: protocol defaults to TCP; a numeric port matches itself or the range up to `endPort`;
 *   a named port matches the destination Pod's container port of that name and protocol.
 * - Addresses of one family never match a block of the other (no IPv4-mapped IPv6 mapping).
 *
 * Not modelled: the node-local exception (traffic from a Pod's own node is always admitted),
 * Service address translation, and hostNetwork Pods. The CIDR arithmetic is written here on
 * purpose, independent of the hook's parser, so that the oracle does not share its bugs.
 */
import type { LabelSelector, LabelSelectorRequirement } from 'kubernetes-types/meta/v1.d.ts'
import type { NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort } from 'kubernetes-types/networking/v1.d.ts'

/** One end of a connection: an address, and the Pod behind it if it is one. */
export interface Endpoint {
  /** A short name used in failure messages. */
  name: string
  /** IPv4 or IPv6 address of this end for the connection evaluated. */
  ip: string
  /** The Pod with that address; absent for anything outside the cluster's Pods. */
  pod?: PodRef
}

/** A Pod as policies see it. */
export interface PodRef {
  namespace: string
  labels: Record<string, string>
  /** Named container ports, for policies that name ports. */
  namedPorts?: Record<string, { port: number; protocol: Protocol }>
}

/** Transport protocols a NetworkPolicy port may name. */
export type Protocol = 'TCP' | 'UDP' | 'SCTP'

/** A connection attempt from `from` to `to` on a destination port. */
export interface Connection {
  from: Endpoint
  to: Endpoint
  port: number
  protocol: Protocol
}

/** The cluster around the policies: namespace labels, for namespaceSelector. */
export interface ClusterView {
  policies: NetworkPolicy[]
  /** Labels of each namespace by name; a namespace missing here has no labels. */
  namespaceLabels?: Record<string, Record<string, string>>
}

type Direction = 'Ingress' | 'Egress'

/** True when the policies admit the connection at both ends. */
export function connectionAllowed(cluster: ClusterView, conn: Connection): boolean {
  return egressAllowed(cluster, conn) && ingressAllowed(cluster, conn)
}

/** True when the source end admits the connection (always, for a source that is not a Pod). */
export function egressAllowed(cluster: ClusterView, conn: Connection): boolean {
  if (conn.from.pod === undefined) return true
  return directionAllowed(cluster, 'Egress', conn.from.pod, conn.to, conn)
}

/** True when the destination end admits the connection (always, for a destination that is not a Pod). */
export function ingressAllowed(cluster: ClusterView, conn: Connection): boolean {
  if (conn.to.pod === undefined) return true
  return directionAllowed(cluster, 'Ingress', conn.to.pod, conn.from, conn)
}

function directionAllowed(cluster: ClusterView, direction: Direction, subject: PodRef, peer: Endpoint, conn: Connection): boolean {
  const selecting = cluster.policies.filter(
    (p) =>
      (p.metadata?.namespace ?? 'default') === subject.namespace &&
      selectorMatches(p.spec?.podSelector ?? {}, subject.labels) &&
      policyTypes(p).includes(direction)
  )
  if (selecting.length === 0) return true
  return selecting.some((policy) => {
    const namespace = policy.metadata?.namespace ?? 'default'
    const rules =
      direction === 'Ingress'
        ? (policy.spec?.ingress ?? []).map((r) => ({ peers: r.from, ports: r.ports }))
        : (policy.spec?.egress ?? []).map((r) => ({ peers: r.to, ports: r.ports }))
    return rules.some(
      (rule) =>
        (rule.peers === undefined || rule.peers.length === 0 || rule.peers.some((p) => peerMatches(cluster, namespace, p, peer))) &&
        (rule.ports === undefined || rule.ports.length === 0 || rule.ports.some((p) => portMatches(p, conn)))
    )
  })
}

/** `policyTypes` as the API server defaults it. */
export function policyTypes(policy: NetworkPolicy): Direction[] {
  const written = policy.spec?.policyTypes ?? []
  if (written.length > 0) return written.filter((t): t is Direction => t === 'Ingress' || t === 'Egress')
  return (policy.spec?.egress ?? []).length > 0 ? ['Ingress', 'Egress'] : ['Ingress']
}

function peerMatches(cluster: ClusterView, policyNamespace: string, peer: NetworkPolicyPeer, endpoint: Endpoint): boolean {
  if (peer.ipBlock !== undefined) {
    const block = parseCidr(peer.ipBlock.cidr)
    const address = parseIp(endpoint.ip)
    return inBlock(address, block) && !(peer.ipBlock.except ?? []).some((except) => inBlock(address, parseCidr(except)))
  }
  const pod = endpoint.pod
  if (pod === undefined) return false
  if (peer.namespaceSelector !== undefined) {
    const labels = cluster.namespaceLabels?.[pod.namespace] ?? {}
    if (!selectorMatches(peer.namespaceSelector, { ...labels, 'kubernetes.io/metadata.name': pod.namespace })) return false
  } else if (pod.namespace !== policyNamespace) {
    return false
  }
  return peer.podSelector === undefined || selectorMatches(peer.podSelector, pod.labels)
}

function portMatches(entry: NetworkPolicyPort, conn: Connection): boolean {
  if ((entry.protocol ?? 'TCP') !== conn.protocol) return false
  if (entry.port === undefined) return true
  if (typeof entry.port === 'string') {
    const named = conn.to.pod?.namedPorts?.[entry.port]
    return named !== undefined && named.port === conn.port && named.protocol === conn.protocol
  }
  const end = entry.endPort ?? entry.port
  return conn.port >= entry.port && conn.port <= end
}

/** Label selector semantics: every matchLabels pair and every expression must hold; `{}` matches all. */
export function selectorMatches(selector: LabelSelector, labels: Record<string, string>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false
  }
  return (selector.matchExpressions ?? []).every((req) => requirementHolds(req, labels))
}

function requirementHolds(req: LabelSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, req.key)
  const value = labels[req.key]
  const values = req.values ?? []
  switch (req.operator) {
    case 'In':
      return has && values.includes(value as string)
    case 'NotIn':
      return !has || !values.includes(value as string)
    case 'Exists':
      return has
    case 'DoesNotExist':
      return !has
    default:
      throw new Error(`unknown label selector operator ${req.operator}`)
  }
}

/** An address or block: family, value as an unsigned integer, prefix length. */
export interface IpBlock {
  family: 4 | 6
  value: bigint
  bits: number
}

/** Parses `a.b.c.d/n` or an IPv6 CIDR; the value is masked to the prefix. Throws on bad input. */
export function parseCidr(text: string): IpBlock {
  const [address, bits, ...rest] = text.split('/')
  if (address === undefined || bits === undefined || rest.length > 0 || !/^\d+$/.test(bits)) {
    throw new Error(`not a CIDR: ${text}`)
  }
  const ip = parseIp(address)
  const length = Number(bits)
  if (length > ip.bits) throw new Error(`prefix too long: ${text}`)
  const width = BigInt(ip.bits)
  const mask = length === 0 ? 0n : ((1n << BigInt(length)) - 1n) << (width - BigInt(length))
  return { family: ip.family, value: ip.value & mask, bits: length }
}

/** Parses an IPv4 or IPv6 address as a full-length block. Throws on bad input. */
export function parseIp(text: string): IpBlock {
  if (!text.includes(':')) {
    const octets = text.split('.')
    if (octets.length !== 4 || octets.some((o) => !/^\d{1,3}$/.test(o) || Number(o) > 255)) {
      throw new Error(`not an IPv4 address: ${text}`)
    }
    return { family: 4, value: octets.reduce((acc, o) => (acc << 8n) | BigInt(o), 0n), bits: 32 }
  }
  const sides = text.split('::')
  if (sides.length > 2) throw new Error(`not an IPv6 address: ${text}`)
  const groups = (side: string | undefined): bigint[] =>
    side === undefined || side === ''
      ? []
      : side.split(':').map((g) => {
          if (!/^[0-9a-fA-F]{1,4}$/.test(g)) throw new Error(`not an IPv6 address: ${text}`)
          return BigInt(parseInt(g, 16))
        })
  const head = groups(sides[0])
  const tail = sides.length === 2 ? groups(sides[1]) : []
  const fill = 8 - head.length - tail.length
  if (sides.length === 2 ? fill < 1 : fill !== 0) throw new Error(`not an IPv6 address: ${text}`)
  const all = [...head, ...Array<bigint>(fill).fill(0n), ...tail]
  return { family: 6, value: all.reduce((acc, g) => (acc << 16n) | g, 0n), bits: 128 }
}

/** True when `address` (a full-length block) lies inside `block` of the same family. */
export function inBlock(address: IpBlock, block: IpBlock): boolean {
  if (address.family !== block.family) return false
  const width = BigInt(address.family === 4 ? 32 : 128)
  const shift = width - BigInt(block.bits)
  return address.value >> shift === block.value >> shift
}
