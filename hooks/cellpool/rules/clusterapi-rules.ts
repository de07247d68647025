/**
 * The rules of `spec.cell.provisioner: ClusterAPI` (docs/cellpool.md, "Cluster API cells"); the
 * settings they admit are resolved by request/resolve.ts.
 *
 * gpucellpool's webhook (internal/webhook/v1alpha1/gpucellpool_validator.go) is followed:
 * - `spec.cell.clusterAPI.clusterName` is required: the Cluster, in the pool's namespace, whose
 *   Machines the cells are;
 * - `bootstrapConfigTemplateRef.kind` ends in `Template`; the config made from it is of the kind
 *   without that suffix, in the same group, at v1beta2;
 * - the guestTemplate may carry only `imageRef`, `guestClassRef` and `interfaces`: a
 *   KubeSwiftMachine takes nothing else of a guest;
 * - `bootstrap.joinSecretRef` is refused beside `bootstrapConfigTemplateRef` (the template's
 *   config then makes the bootstrap data, and the join template would be unused) and required
 *   without it (the pool renders the Machine's data Secret from it).
 *
 * Choices where gpucellpool is silent: `clusterName` is a DNS label, as Cluster API's own webhook
 * asks of a Cluster name; the template's group is a DNS subdomain and its name a DNS subdomain;
 * `version` is at most 256 characters (Cluster API adds the `v` prefix it defaults itself). The
 * workload agent creates the config with its own rights, so the template's group must be
 * `bootstrap.cluster.x-k8s.io` and its kind one of the allowlisted providers' (cellinfrastructure.ts).
 */
import { BOOTSTRAP_CONFIG_KINDS, BOOTSTRAP_GROUP, isBootstrapConfigKind } from '../../api/cellinfrastructure.ts'
import { asRecord, isRecord } from '../../k8s/objects.ts'
import type { PoolProblem } from '../model/problems.ts'
import { TEMPLATE_SUFFIX, configKindOf, usesClusterApi } from '../request/resolve.ts'

/** The guestTemplate fields a Cluster API cell uses (the KubeSwiftMachine's swiftGuest backend). */
export const CLUSTER_API_GUEST_FIELDS = ['imageRef', 'guestClassRef', 'interfaces'] as const

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const KIND = /^[A-Z][A-Za-z0-9]*$/

const shown = (value: unknown): string => (typeof value === 'string' ? JSON.stringify(value.slice(0, 80)) : String(typeof value))

/** Whether the pool's Machines take their bootstrap data from a bootstrap config template. */
export function usesBootstrapTemplate(spec: unknown): boolean {
  return usesClusterApi(spec) && asRecord(asRecord(spec).cell).clusterAPI !== undefined && isRecord(bootstrapTemplateRef(spec))
}

function bootstrapTemplateRef(spec: unknown): unknown {
  return asRecord(asRecord(asRecord(spec).cell).clusterAPI).bootstrapConfigTemplateRef
}

/**
 * Every ClusterAPI rule against `spec` (any JSON). Nothing for a SwiftGuest pool; the join
 * Secret rule of a pool without a template stays validate.ts's (it is the SwiftGuest rule).
 * `guestFields` are the guestTemplate fields a SwiftGuest cell may set: only those are named
 * here, every other key is refused by the SwiftGuest check with its own reason.
 */
export function clusterApiProblems(spec: unknown, guestFields: readonly string[]): PoolProblem[] {
  if (!usesClusterApi(spec)) return []
  const cell = asRecord(asRecord(spec).cell)
  const base = 'spec.cell.clusterAPI'
  if (!isRecord(cell.clusterAPI)) {
    return [{ field: base, message: `${base} is required with provisioner ClusterAPI: it names the Cluster the cells join` }]
  }
  const capi = cell.clusterAPI
  const problems: PoolProblem[] = []
  const clusterName = capi.clusterName
  if (typeof clusterName === 'string' && clusterName !== '' && !(clusterName.length <= 63 && DNS_LABEL.test(clusterName))) {
    problems.push({
      field: `${base}.clusterName`,
      message: `${base}.clusterName ${shown(clusterName)} is not a Cluster name (a DNS label of at most 63 characters)`
    })
  }
  if (typeof capi.version === 'string' && capi.version.length > 256) {
    problems.push({ field: `${base}.version`, message: `${base}.version is longer than 256 characters` })
  }
  const ref = capi.bootstrapConfigTemplateRef
  if (isRecord(ref)) problems.push(...templateRefProblems(`${base}.bootstrapConfigTemplateRef`, ref))
  problems.push(...guestTemplateProblems(cell.guestTemplate, guestFields))
  const joinSecret = asRecord(asRecord(asRecord(spec).bootstrap).joinSecretRef).name
  if (isRecord(ref) && joinSecret !== undefined) {
    problems.push({
      field: 'spec.bootstrap.joinSecretRef',
      message:
        'spec.bootstrap.joinSecretRef must not be set with spec.cell.clusterAPI.bootstrapConfigTemplateRef: ' +
        'the bootstrap config made from the template gives each Machine its bootstrap data, so the join template would be unused'
    })
  }
  return problems
}

function templateRefProblems(field: string, ref: Record<string, unknown>): PoolProblem[] {
  const problems: PoolProblem[] = []
  const { apiGroup, kind, name } = ref
  if (typeof apiGroup === 'string' && apiGroup !== '' && !(apiGroup.length <= 253 && DNS_SUBDOMAIN.test(apiGroup))) {
    problems.push({ field: `${field}.apiGroup`, message: `${field}.apiGroup ${shown(apiGroup)} is not an API group (a DNS subdomain)` })
  } else if (typeof apiGroup === 'string' && apiGroup !== '' && apiGroup !== BOOTSTRAP_GROUP) {
    problems.push({
      field: `${field}.apiGroup`,
      message: `${field}.apiGroup ${shown(apiGroup)} is not allowed: the workload agent creates bootstrap configs of ${BOOTSTRAP_GROUP} only`
    })
  }
  if (typeof kind === 'string' && kind !== '') {
    if (!kind.endsWith(TEMPLATE_SUFFIX) || kind.length === TEMPLATE_SUFFIX.length) {
      problems.push({
        field: `${field}.kind`,
        message: `${field}.kind ${shown(kind)} must end in Template: each Machine gets a config of the kind without it, copied from the template`
      })
    } else if (!(kind.length <= 63 + TEMPLATE_SUFFIX.length && KIND.test(kind))) {
      problems.push({
        field: `${field}.kind`,
        message: `${field}.kind ${shown(kind)} is not a kind (letters and digits, upper-case first)`
      })
    } else if (!isBootstrapConfigKind(configKindOf(kind))) {
      problems.push({
        field: `${field}.kind`,
        message: `${field}.kind ${shown(kind)} is not allowed: the workload agent creates configs of ${BOOTSTRAP_CONFIG_KINDS.map((k) => `${k}${TEMPLATE_SUFFIX}`).join(', ')} only`
      })
    }
  }
  if (typeof name === 'string' && name !== '' && !(name.length <= 253 && DNS_SUBDOMAIN.test(name))) {
    problems.push({ field: `${field}.name`, message: `${field}.name ${shown(name)} is not an object name (a DNS subdomain)` })
  }
  return problems
}

function guestTemplateProblems(template: unknown, guestFields: readonly string[]): PoolProblem[] {
  if (!isRecord(template)) return []
  const allowed = new Set<string>(CLUSTER_API_GUEST_FIELDS)
  return Object.keys(template)
    .filter((key) => guestFields.includes(key) && !allowed.has(key) && template[key] !== undefined && template[key] !== null)
    .sort()
    .map((key) => {
      const field = `spec.cell.guestTemplate.${key.slice(0, 80)}`
      return {
        field,
        message: `${field} is forbidden with provisioner ClusterAPI: a KubeSwiftMachine takes only imageRef, guestClassRef and interfaces of a guest`
      }
    })
}
