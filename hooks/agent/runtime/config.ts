/**
 * The agent's settings, from its environment (docs/workload.md, "The agent process" and "Using it"). Read once at start; every problem is named with its variable and rule, all
 * of them together, and the process does not start (as the hook service's `server/config.ts`).
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `PORT` | 8081 | `/healthz`, `/readyz`, `/metrics` over plain HTTP on `::` |
 * | `LOG_LEVEL` | info | pino level; JSON lines on stdout |
 * | `CELL_POOLS` | true | `false`: no cell pool controllers (CellNodeSets, CellInfrastructures, the DRA physical GPUs): the agent runs for Instances alone, on a cluster without the cells.kubeswift.io CRDs, and needs `PROMETHEUS_URL` or `ACTIVITY_STOPS=true` |
 * | `WATCH_NAMESPACE` | all | serve the CellNodeSets (and read the Secrets) of this namespace only |
 * | `RESYNC_SECONDS` | 15 | a pass per CellNodeSet at least this often, and on every change |
 * | `LEADER_ELECTION` | true | `false`: no Lease, this replica acts alone (run one replica only) |
 * | `LEASE_NAMESPACE`, else `POD_NAMESPACE` | default | where the leader Lease is |
 * | `LEASE_NAME` | gpuhooks-workload-agent | the leader Lease |
 * | `POD_NAME` | host name and pid | this replica's identity in the Lease |
 * | `LEADER_ELECTION_RETRY_SECONDS` | 2 | how often a replica reads, takes or renews the Lease |
 * | `SHUTDOWN_TIMEOUT_SECONDS` | 25 | on SIGTERM, the longest wait for the pass in progress and the Lease release; past it the process exits 1 |
 * | `AGENT_CALL_TIMEOUT_SECONDS` | 10 | deadline of each API call to either cluster |
 * | `AGENT_PASS_TIMEOUT_SECONDS` | 60 | deadline of one CellNodeSet's pass; past it the pass is abandoned |
 * | `AGENT_PASS_WORKERS` | 4 | passes at once, each for a different workload cluster (kubeconfig Secret) |
 * | `AGENT_NAMESPACE_PASS_WORKERS` | 2 | of those, passes at once for the CellNodeSets of one namespace |
 * | `AGENT_MAX_ANSWER_BYTES` | 8 MiB | the largest answer read from a workload cluster |
 * | `AGENT_MAX_PASS_BYTES` | 16 MiB | all a pass reads from its workload cluster (the round's pending Pod list included, when this pass lists it) |
 * | `AGENT_MAX_PENDING_PODS` | 5000 | unbound pending Pods listed per workload cluster and round; past it the list is truncated |
 * | `AGENT_LEASE_STALE_SECONDS`, `AGENT_HEARTBEAT_STALE_SECONDS`, `AGENT_STARTUP_GRACE_SECONDS` | 90, 360, 90 | the liveness windows (docs/workload.md fixes them; tests shorten them) |
 * | `PERMITTED_NODE_KEYS` | none | Node label and taint keys (or prefixes ending in `/`) the admin permits a pool past the restricted-key rule; the hook service reads the same variable |
 * | `PROMETHEUS_URL` | none | the Prometheus whose HTTP API the activity controller queries (`http` or `https`, no credentials in it); unset: no observation |
 * | `ACTIVITY_STOPS` | false | `true`: the activity controller carries out the stops the Instance hook requests, with or without `PROMETHEUS_URL` (maxRunDuration needs no observation) |
 * | `ACTIVITY_ROUND_SECONDS` | 60 | one Prometheus query per round for every Instance; the query's window is twice the round |
 * | `ACTIVITY_STATUS_REFRESH_SECONDS` | 300 | the longest interval between two status writes of an observed InstanceActivity (its `status.roundSeconds`; the hook holds an observation older than three as stale) |
 * | `ACTIVITY_QUERY_TIMEOUT_SECONDS` | 10 | deadline of the query |
 * | `ACTIVITY_MAX_ANSWER_BYTES` | 16 MiB | the largest answer read from Prometheus |
 */
import { hostname } from 'node:os'
import { pino } from 'pino'
import { isDnsLabel, isDnsSubdomain } from '../../k8s/names.ts'
import { parsePermittedNodeKeys } from '../../k8s/node-keys.ts'
import { DEFAULT_TIMINGS } from './leader.ts'
import type { LivenessWindows } from '../model/observed.ts'

/** The agent process settings (the table above). */
export interface AgentConfig {
  port: number
  logLevel: string
  /** Undefined: every namespace. */
  watchNamespace: string | undefined
  resyncMs: number
  leaderElection: boolean
  lease: { namespace: string; name: string }
  identity: string
  /** How often the election loop runs a round. */
  electionRetryMs: number
  shutdownTimeoutMs: number
  callTimeoutMs: number
  /** What bounds the passes (docs/workload.md, "Bounds"). */
  passes: PassBounds
  windows: LivenessWindows
  /** `PERMITTED_NODE_KEYS`, parsed: keys and prefixes, sorted. */
  permittedNodeKeys: readonly string[]
  /** `CELL_POOLS`: run the cell pool controllers (CellNodeSets, CellInfrastructures, DRA physical GPUs). */
  cellPools: boolean
  /** The activity controller of Instances (hooks/agent/activity). */
  activity: ActivityConfig
}

/** The activity controller's settings; it runs when `prometheusURL` is set or `stops` is true. */
export interface ActivityConfig {
  /** The base URL of Prometheus's HTTP API; undefined: no observation. */
  prometheusURL: string | undefined
  /** Carry out the stops InstanceActivities request. */
  stops: boolean
  roundMs: number
  /** The longest interval between two status writes (status.roundSeconds). */
  refreshMs: number
  queryTimeoutMs: number
  maxAnswerBytes: number
}

/** The bounds of passes against workload clusters. */
export interface PassBounds {
  timeoutMs: number
  workers: number
  namespaceWorkers: number
  maxAnswerBytes: number
  maxPassBytes: number
  maxPendingPods: number
}

const MiB = 1024 * 1024

/** pino's levels, most severe first, and `silent`. */
const LEVELS = [
  ...Object.entries(pino.levels.values)
    .sort((a, b) => b[1] - a[1])
    .map(([level]) => level),
  'silent'
]

/**
 * The longest election round that still renews the Lease within the renew deadline with room for
 * a slow renewal: client-go asks the deadline to exceed 1.2 × the retry period.
 */
const MAX_ELECTION_RETRY_SECONDS = Math.floor(DEFAULT_TIMINGS.renewDeadlineMs / 1000 / 1.2)

/**
 * Reads the environment; throws one error naming every variable that is wrong and its rule.
 * `host` gives the default identity (tests pass their own).
 */
export function readAgentConfig(
  env: NodeJS.ProcessEnv,
  host: { name: string; pid: number } = { name: hostname(), pid: process.pid }
): AgentConfig {
  const problems: string[] = []
  const set = (name: string): string | undefined => {
    const raw = env[name]
    return raw === undefined || raw === '' ? undefined : raw
  }
  const integer = (name: string, fallback: number, min: number, max: number, why = ''): number => {
    const raw = set(name)
    if (raw === undefined) return fallback
    const value = Number(raw)
    if (!/^\s*\d+\s*$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      problems.push(`${name}=${raw} must be an integer from ${min} to ${max}${why}`)
      return fallback
    }
    return value
  }
  const seconds = (name: string, fallback: number, min: number, max = 3600, why = ''): number =>
    integer(name, fallback, min, max, why) * 1000
  const name = (variable: string, fallback: string, valid: (value: string) => boolean, rule: string): string => {
    const raw = set(variable) ?? fallback
    if (!valid(raw)) problems.push(`${variable}=${raw} must be ${rule}`)
    return raw
  }

  const port = integer('PORT', 8081, 0, 65535)
  const logLevel = set('LOG_LEVEL') ?? 'info'
  if (!LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL=${logLevel} must be one of ${LEVELS.join(', ')}`)
  const watchNamespace = set('WATCH_NAMESPACE')
  if (watchNamespace !== undefined && !isDnsLabel(watchNamespace))
    problems.push(`WATCH_NAMESPACE=${watchNamespace} must be a namespace name (a DNS label), or empty for every namespace`)
  const election = set('LEADER_ELECTION') ?? 'true'
  if (election !== 'true' && election !== 'false') problems.push(`LEADER_ELECTION=${election} must be true or false`)
  const leaseNamespaceVariable = set('LEASE_NAMESPACE') !== undefined ? 'LEASE_NAMESPACE' : 'POD_NAMESPACE'
  const workers = integer('AGENT_PASS_WORKERS', 4, 1, 256)
  const maxAnswerBytes = integer('AGENT_MAX_ANSWER_BYTES', 8 * MiB, 64 * 1024, 1024 * MiB)
  const permitted = parsePermittedNodeKeys(env.PERMITTED_NODE_KEYS)
  problems.push(...permitted.problems)
  const stops = set('ACTIVITY_STOPS') ?? 'false'
  if (stops !== 'true' && stops !== 'false') problems.push(`ACTIVITY_STOPS=${stops} must be true or false`)
  const roundSeconds = integer('ACTIVITY_ROUND_SECONDS', 60, 5, 3600)
  const cellPools = set('CELL_POOLS') ?? 'true'
  if (cellPools !== 'true' && cellPools !== 'false') problems.push(`CELL_POOLS=${cellPools} must be true or false`)
  const config: AgentConfig = {
    port,
    logLevel,
    watchNamespace,
    resyncMs: seconds('RESYNC_SECONDS', 15, 1),
    leaderElection: election !== 'false',
    lease: {
      namespace: name(leaseNamespaceVariable, 'default', isDnsLabel, 'a namespace name (a DNS label)'),
      name: name('LEASE_NAME', 'gpuhooks-workload-agent', isDnsSubdomain, 'a Lease name (a DNS subdomain)')
    },
    identity: set('POD_NAME') ?? `${host.name}-${host.pid}`,
    electionRetryMs: seconds(
      'LEADER_ELECTION_RETRY_SECONDS',
      DEFAULT_TIMINGS.retryPeriodMs / 1000,
      1,
      MAX_ELECTION_RETRY_SECONDS,
      ` (the leader renews its Lease every round and must within ${DEFAULT_TIMINGS.renewDeadlineMs / 1000} s)`
    ),
    shutdownTimeoutMs: seconds('SHUTDOWN_TIMEOUT_SECONDS', 25, 1),
    callTimeoutMs: seconds('AGENT_CALL_TIMEOUT_SECONDS', 10, 1, 300),
    passes: {
      timeoutMs: seconds('AGENT_PASS_TIMEOUT_SECONDS', 60, 1),
      workers,
      namespaceWorkers: integer(
        'AGENT_NAMESPACE_PASS_WORKERS',
        Math.min(2, workers),
        1,
        workers,
        ` (at most AGENT_PASS_WORKERS=${workers})`
      ),
      maxAnswerBytes,
      maxPassBytes: integer(
        'AGENT_MAX_PASS_BYTES',
        Math.max(16 * MiB, maxAnswerBytes),
        maxAnswerBytes,
        4096 * MiB,
        ` (at least AGENT_MAX_ANSWER_BYTES=${maxAnswerBytes})`
      ),
      maxPendingPods: integer('AGENT_MAX_PENDING_PODS', 5000, 1, 1_000_000)
    },
    windows: {
      leaseMs: seconds('AGENT_LEASE_STALE_SECONDS', 90, 1),
      heartbeatMs: seconds('AGENT_HEARTBEAT_STALE_SECONDS', 360, 1),
      startupMs: seconds('AGENT_STARTUP_GRACE_SECONDS', 90, 0)
    },
    permittedNodeKeys: permitted.keys,
    cellPools: cellPools !== 'false',
    activity: {
      prometheusURL: prometheusUrl(set('PROMETHEUS_URL'), problems),
      stops: stops === 'true',
      roundMs: roundSeconds * 1000,
      refreshMs: seconds(
        'ACTIVITY_STATUS_REFRESH_SECONDS',
        Math.max(300, roundSeconds),
        roundSeconds,
        86400,
        ` (at least ACTIVITY_ROUND_SECONDS=${roundSeconds})`
      ),
      queryTimeoutMs: seconds('ACTIVITY_QUERY_TIMEOUT_SECONDS', 10, 1, 300),
      maxAnswerBytes: integer('ACTIVITY_MAX_ANSWER_BYTES', 16 * MiB, 64 * 1024, 1024 * MiB)
    }
  }
  if (!config.cellPools && !activityOn(config.activity) && !problems.some((p) => /^(PROMETHEUS_URL|ACTIVITY_STOPS)\b/.test(p)))
    problems.push('CELL_POOLS=false with neither PROMETHEUS_URL nor ACTIVITY_STOPS=true leaves the agent nothing to do')
  if (problems.length > 0) throw new Error(`invalid environment: ${problems.join('; ')}`)
  return config
}

/** The activity controller runs: it observes (`PROMETHEUS_URL`) or carries out stops (`ACTIVITY_STOPS`). */
export function activityOn(activity: Pick<ActivityConfig, 'prometheusURL' | 'stops'>): boolean {
  return activity.prometheusURL !== undefined || activity.stops
}

/** `PROMETHEUS_URL` checked: an http or https URL without credentials, query or fragment; its trailing slash dropped. */
function prometheusUrl(raw: string | undefined, problems: string[]): string | undefined {
  if (raw === undefined) return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    problems.push(`PROMETHEUS_URL=${raw} must be an http or https URL`)
    return undefined
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`PROMETHEUS_URL=${raw} must be an http or https URL`)
  else if (url.username !== '' || url.password !== '')
    problems.push('PROMETHEUS_URL must not carry credentials (they would be logged and written to status)')
  else if (url.search !== '' || url.hash !== '') problems.push(`PROMETHEUS_URL=${raw} must have no query or fragment`)
  else return url.href.replace(/\/+$/, '')
  return undefined
}
