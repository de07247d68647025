/**
 * The NetworkPolicy `gpustack-instance-isolation` that isolates a namespace's Instance Pods from
 * the Pods of every other namespace (docs/isolation.md, "The policy").
 *
 * The object is written in the form the API server stores, so that Metacontroller's 3-way merge
 * of (observed, last applied, desired) finds nothing to change on the next sync:
 *
 * - The API server defaults exactly two things in a NetworkPolicy (k8s.io/kubernetes
 *   `pkg/apis/networking/v1/defaults.go`): `protocol: TCP` on a port entry without one, and
 *   `policyTypes` when empty. Both are written here. `ingress`/`egress` are atomic lists in the
 *   merge (their items share no merge key), so a defaulted field inside them would otherwise show
 *   up as a difference on every sync.
 * - Empty lists are never written (the server drops them): a family without CIDRs gets no ipBlock
 *   at all, and the DNS rule has no `to` (which means every destination).
 * - Object keys are written in sorted order and list order is fixed (same-namespace peer, IPv4
 *   block, IPv6 block; DNS over UDP, then TCP), so a second render is byte-identical.
 *
 * Chosen where the spec is silent: all peers of a direction share one rule (a rule without
 * `ports` admits every port), and DNS is a separate egress rule without `to`, i.e. port 53 to any
 * destination, as docs/isolation.md says ("to anywhere").
 */
import type { NetworkPolicyPeer, NetworkPolicySpec } from 'kubernetes-types/networking/v1.d.ts'
import { MANAGED_BY, MANAGED_BY_LABEL, RESOURCE_TYPE_INSTANCES, RESOURCE_TYPE_LABEL } from '../k8s/labels.ts'
import { isRecord, ownValue, type KubeObject } from '../k8s/objects.ts'
import type { PodCidrs } from './cidrs.ts'

/** Name of the policy the decorator renders in each namespace. */
export const POLICY_NAME = 'gpustack-instance-isolation'
/** API version of NetworkPolicy. */
export const NETWORK_POLICY_API_VERSION = 'networking.k8s.io/v1'

/** The rendered policy: a NetworkPolicy with every field the hook sets. */
export interface IsolationPolicy extends KubeObject {
  apiVersion: typeof NETWORK_POLICY_API_VERSION
  kind: 'NetworkPolicy'
  spec: NetworkPolicySpec
}

/**
 * The isolation policy of `namespace` for the given pod CIDRs: Instance Pods accept traffic from,
 * and send traffic to, Pods of their own namespace and any address outside the pod CIDRs of the
 * families the Setting names; they may also reach port 53 (UDP and TCP) anywhere. A family with
 * no CIDRs gets no ipBlock, so on a dual-stack cluster naming only IPv4 pod CIDRs opens nothing
 * over IPv6 beyond the namespace itself and DNS.
 */
export function buildPolicy(namespace: string, cidrs: PodCidrs): IsolationPolicy {
  const peers: NetworkPolicyPeer[] = [{ podSelector: {} }]
  if (cidrs.ipv4.length > 0) peers.push({ ipBlock: { cidr: '0.0.0.0/0', except: [...cidrs.ipv4] } })
  if (cidrs.ipv6.length > 0) peers.push({ ipBlock: { cidr: '::/0', except: [...cidrs.ipv6] } })
  return {
    apiVersion: NETWORK_POLICY_API_VERSION,
    kind: 'NetworkPolicy',
    metadata: {
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
      name: POLICY_NAME,
      namespace
    },
    spec: {
      egress: [
        { to: structuredClone(peers) },
        {
          ports: [
            { port: 53, protocol: 'UDP' },
            { port: 53, protocol: 'TCP' }
          ]
        }
      ],
      ingress: [{ from: structuredClone(peers) }],
      // The label the Instance controller puts on every Instance Pod (docs/instance.md, "The Pod").
      podSelector: { matchLabels: { [RESOURCE_TYPE_LABEL]: RESOURCE_TYPE_INSTANCES } },
      policyTypes: ['Ingress', 'Egress']
    }
  }
}

/**
 * Spec fields the API server fills in when absent; if the hook ever stopped rendering one, its
 * presence in the observed object would be the server's doing, not drift.
 */
const SERVER_DEFAULTED_SPEC_FIELDS: ReadonlySet<string> = new Set(['policyTypes'])

/**
 * The field paths of the observed policy's spec that a 3-way merge keeps although the hook never
 * renders them, sorted, e.g. `spec.podSelector.matchExpressions` or
 * `spec.podSelector.matchLabels["team"]`.
 *
 * Only object members can survive the merge: a member the hook renders is overwritten, and a
 * list the hook renders (`ingress`, `egress`, `policyTypes`, and every list inside them) is
 * replaced whole, so a hand edit there is reverted by the same sync and is not drift. A member
 * present in the observed spec but absent from the rendered one is kept by the merge, and is
 * reported. Fields the server only defaults are ignored. An absent observed policy has no drift.
 */
export function policyDrift(observed: KubeObject | undefined, rendered: KubeObject): string[] {
  if (observed === undefined || !isRecord(observed.spec) || !isRecord(rendered.spec)) return []
  const paths: string[] = []
  for (const key of Object.keys(observed.spec)) {
    const renders = Object.hasOwn(rendered.spec, key)
    if (!renders && SERVER_DEFAULTED_SPEC_FIELDS.has(key)) continue
    collectDrift(`spec${pathSegment(key)}`, observed.spec[key], renders, ownValue(rendered.spec, key), paths)
  }
  return paths.sort()
}

function collectDrift(path: string, observed: unknown, rendersIt: boolean, rendered: unknown, paths: string[]): void {
  if (!rendersIt) {
    paths.push(path)
    return
  }
  if (!isRecord(observed) || !isRecord(rendered)) return
  for (const key of Object.keys(observed)) {
    // Own members only: an observed key such as `constructor` is drift, not a member of every object.
    collectDrift(`${path}${pathSegment(key)}`, observed[key], Object.hasOwn(rendered, key), ownValue(rendered, key), paths)
  }
}

/** `.name` for plain identifiers, `["app.kubernetes.io/name"]` for any other key. */
function pathSegment(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
}
