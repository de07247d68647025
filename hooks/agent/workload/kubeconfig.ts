/**
 * Which CellNodeSets the agent serves, and with which credentials (docs/workload.md, step 0).
 *
 * A pool's author chooses the kubeconfig Secret, so its content is untrusted: `exec` would run a
 * tenant's command inside the agent, a file path (`certificate-authority`, `tokenFile`,
 * `client-certificate`, `client-key`) would send the agent's own files, and `proxy-url` would route
 * the agent's credentials elsewhere. The kubeconfig is therefore reduced to the server, its CA and
 * TLS name, and a token or client certificate given as data, and any other field is refused,
 * naming it. The admin opts a Secret in with the label `cells.kubeswift.io/workload-kubeconfig:
 * "true"`; a CellNodeSet is served only when its controller owner is the GPUCellPool whose uid its
 * spec names.
 */
import { parse } from 'yaml'
import { WORKLOAD_KUBECONFIG_LABEL } from '../../api/cellnodeset.ts'
import { isRecord } from '../../k8s/objects.ts'
import { errorText } from './reachability.ts'

/** What the agent connects with: nothing but these fields reaches the client. */
export interface ReducedKubeconfig {
  server: string
  caData?: string
  tlsServerName?: string
  token?: string
  certData?: string
  keyData?: string
}

/** A kubeconfig that cannot be used, with the reason a person can act on. */
export interface CredentialProblem {
  reason: 'CredentialInvalid'
  message: string
}

export type Reduced = { ok: true; config: ReducedKubeconfig } | { ok: false; problem: CredentialProblem }

const CLUSTER_FIELDS = ['server', 'certificate-authority-data', 'tls-server-name'] as const
const USER_FIELDS = ['token', 'client-certificate-data', 'client-key-data'] as const
/** Fields refused because of what they would make the agent do, with that reason. */
const DANGEROUS: Record<string, string> = {
  exec: 'it would run a command inside the agent',
  'auth-provider': 'it would run a provider plugin inside the agent',
  'certificate-authority': 'a file path would make the agent read its own files',
  tokenFile: 'a file path would make the agent read its own files',
  'client-certificate': 'a file path would make the agent read its own files',
  'client-key': 'a file path would make the agent read its own files',
  'proxy-url': "it would send the agent's traffic through a proxy the kubeconfig names"
}
/** Larger than any kubeconfig with inline certificates. */
const MAX_BYTES = 256 * 1024

const bad = (message: string): Reduced => ({ ok: false, problem: { reason: 'CredentialInvalid', message } })

/** Parses and reduces a kubeconfig's text; every problem is a CredentialInvalid naming the field. */
export function reduceKubeconfig(text: string): Reduced {
  if (text.length > MAX_BYTES) return bad(`the kubeconfig is larger than ${MAX_BYTES} bytes`)
  let doc: unknown
  try {
    doc = parse(text, { maxAliasCount: 10, prettyErrors: false, uniqueKeys: true })
  } catch (error) {
    return bad(`the kubeconfig is not valid YAML: ${(error as Error).message.split('\n')[0] ?? ''}`)
  }
  if (!isRecord(doc)) return bad('the kubeconfig is not a YAML mapping')

  const problems: string[] = []
  const entries = (list: string, inner: string, allowed: readonly string[]): Map<string, Record<string, unknown>> => {
    const out = new Map<string, Record<string, unknown>>()
    const items = doc[list]
    if (items === undefined || items === null) return out
    if (!Array.isArray(items)) {
      problems.push(`${list} is not a list`)
      return out
    }
    items.forEach((item, index) => {
      const at = `${list}[${index}]`
      if (!isRecord(item) || typeof item.name !== 'string') {
        problems.push(`${at} has no name`)
        return
      }
      const body = item[inner]
      if (!isRecord(body)) {
        problems.push(`${at}.${inner} is not a mapping`)
        return
      }
      for (const field of Object.keys(body)) {
        if (allowed.includes(field)) {
          if (typeof body[field] !== 'string') problems.push(`${at}.${inner}.${field} is not a string`)
          continue
        }
        const why = Object.hasOwn(DANGEROUS, field) ? DANGEROUS[field] : `only ${allowed.join(', ')} are allowed`
        problems.push(`${at}.${inner}.${field} is refused: ${why}`)
      }
      out.set(item.name, body)
    })
    return out
  }
  const clusters = entries('clusters', 'cluster', CLUSTER_FIELDS)
  const users = entries('users', 'user', USER_FIELDS)
  if (problems.length > 0) return bad(problems.join('; '))

  const contexts = Array.isArray(doc.contexts) ? doc.contexts.filter(isRecord) : []
  const currentName = typeof doc['current-context'] === 'string' ? doc['current-context'] : undefined
  const current = currentName !== undefined ? contexts.find((c) => c.name === currentName) : contexts.length === 1 ? contexts[0] : undefined
  if (current === undefined || !isRecord(current.context)) {
    return bad(currentName !== undefined ? `current-context ${currentName} names no context` : 'current-context is not set')
  }
  const clusterName = current.context.cluster
  const userName = current.context.user
  const cluster = typeof clusterName === 'string' ? clusters.get(clusterName) : undefined
  const user = typeof userName === 'string' ? users.get(userName) : undefined
  if (cluster === undefined) return bad(`the current context names no cluster entry (${String(clusterName)})`)
  if (user === undefined) return bad(`the current context names no user entry (${String(userName)}): a credential is required`)

  const server = cluster.server as string | undefined
  if (server === undefined || !/^https:\/\/[^\s/]+/.test(server)) return bad('cluster.server must be an https:// URL')
  const config: ReducedKubeconfig = { server }
  const base64 = (field: string, value: unknown): string | undefined => {
    if (value === undefined) return undefined
    const text = typeof value === 'string' ? value.replace(/\s+/g, '') : ''
    if (text === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) {
      problems.push(`${field} is not base64`)
      return undefined
    }
    return text
  }
  const ca = base64('cluster.certificate-authority-data', cluster['certificate-authority-data'])
  const cert = base64('user.client-certificate-data', user['client-certificate-data'])
  const key = base64('user.client-key-data', user['client-key-data'])
  if (ca !== undefined) config.caData = ca
  if (typeof cluster['tls-server-name'] === 'string' && cluster['tls-server-name'] !== '') config.tlsServerName = cluster['tls-server-name']
  if (typeof user.token === 'string' && user.token !== '') config.token = user.token
  if ((cert === undefined) !== (key === undefined))
    problems.push('user.client-certificate-data and user.client-key-data must be given together')
  else if (cert !== undefined && key !== undefined) {
    config.certData = cert
    config.keyData = key
  }
  if (problems.length > 0) return bad(problems.join('; '))
  if (config.token === undefined && config.certData === undefined) {
    return bad('the user has no credential: give token, or client-certificate-data with client-key-data')
  }
  return { ok: true, config }
}

/**
 * The kubeconfig text from the CellNodeSet's Secret, or why it cannot be used: the Secret must
 * exist, carry the opt-in label and hold the key.
 */
export function kubeconfigFromSecret(secret: unknown, ref: { namespace: string; name: string; key: string }): Reduced {
  const where = `Secret ${ref.namespace}/${ref.name}`
  if (!isRecord(secret) || !isRecord(secret.metadata)) return bad(`${where} does not exist`)
  const labels = isRecord(secret.metadata.labels) ? secret.metadata.labels : {}
  if (labels[WORKLOAD_KUBECONFIG_LABEL] !== 'true') {
    return bad(`${where} lacks the label ${WORKLOAD_KUBECONFIG_LABEL}: "true" (an admin's opt-in)`)
  }
  const data = isRecord(secret.data) ? secret.data : {}
  const value = Object.hasOwn(data, ref.key) ? data[ref.key] : undefined
  if (typeof value !== 'string') return bad(`${where} has no key ${ref.key}`)
  return reduceKubeconfig(Buffer.from(value, 'base64').toString('utf8'))
}

/** A value for a message: strings as they are, anything else as JSON (`String()` of an object with a `toString` field that is not a function throws). */
function text(value: unknown): string {
  if (typeof value === 'string') return value
  // JSON.stringify gives undefined for undefined (and functions), though typed as string.
  const json: string | undefined = JSON.stringify(value)
  return json ?? 'undefined'
}

/** Where a pass reports why it is not served, or that its pool could not be read. */
export interface OwnerReport {
  notServed?: string
  errors: { reason: string; message: string }[]
}

/**
 * The owner check every pass makes first, for a CellNodeSet and a CellInfrastructure alike: reads
 * the GPUCellPool its controller owner reference names (in `namespace`) and checks it with
 * {@link ownerProblem}. Returns the pool read (undefined for a deleting object that outlived its
 * pool) when the object is served; otherwise undefined, with why in `report` (`notServed`, or a
 * `PoolRead` error).
 */
export async function checkPoolOwner(
  object: unknown,
  namespace: string,
  getPool: (namespace: string, name: string) => Promise<unknown>,
  report: OwnerReport
): Promise<{ pool: unknown } | undefined> {
  const refs =
    isRecord(object) && isRecord(object.metadata) && Array.isArray(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []
  const controller: unknown = refs.find((r) => isRecord(r) && r.controller === true)
  const poolName = isRecord(controller) && typeof controller.name === 'string' ? controller.name : undefined
  let pool: unknown
  try {
    pool = poolName === undefined ? undefined : await getPool(namespace, poolName)
  } catch (error) {
    report.errors.push({ reason: 'PoolRead', message: errorText(error) })
    return undefined
  }
  const problem = ownerProblem(object, pool)
  if (problem === undefined) return { pool }
  report.notServed = problem
  return undefined
}

/** Why a CellNodeSet is not served, or undefined when it is (docs/workload.md step 0, owner check). */
export function ownerProblem(cns: unknown, pool: unknown): string | undefined {
  if (!isRecord(cns) || !isRecord(cns.metadata) || !isRecord(cns.spec)) return 'not a CellNodeSet'
  const poolUID = cns.spec.poolUID
  const refs = Array.isArray(cns.metadata.ownerReferences) ? cns.metadata.ownerReferences.filter(isRecord) : []
  const controller = refs.find((r) => r.controller === true)
  if (controller === undefined) return 'it has no controller owner reference'
  if (
    controller.kind !== 'GPUCellPool' ||
    typeof controller.apiVersion !== 'string' ||
    !controller.apiVersion.startsWith('cells.kubeswift.io/')
  ) {
    return `its controller is a ${text(controller.kind)}, not a GPUCellPool`
  }
  if (controller.uid !== poolUID) return `its controller's uid ${text(controller.uid)} is not spec.poolUID ${text(poolUID)}`
  // A CellNodeSet being deleted may outlive its pool; the reference alone then vouches for it.
  if (cns.metadata.deletionTimestamp !== undefined && pool === undefined) return undefined
  if (!isRecord(pool) || !isRecord(pool.metadata)) return `its GPUCellPool ${text(controller.name)} does not exist`
  if (pool.metadata.uid !== poolUID)
    return `GPUCellPool ${text(controller.name)} has uid ${text(pool.metadata.uid)}, not spec.poolUID ${text(poolUID)}`
  return undefined
}
