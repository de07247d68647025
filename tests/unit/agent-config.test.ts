/**
 * The agent's settings: every variable checked at start, every problem named with its variable
 * and rule, all of them in one error, as the hook service does.
 */
import t from 'tap'
import { activityOn, readAgentConfig, type AgentConfig } from '../../hooks/agent/runtime/config.ts'

const HOST = { name: 'node-1', pid: 42 }

const DEFAULTS: AgentConfig = {
  port: 8081,
  logLevel: 'info',
  watchNamespace: undefined,
  resyncMs: 15_000,
  leaderElection: true,
  lease: { namespace: 'default', name: 'gpuhooks-workload-agent' },
  identity: 'node-1-42',
  electionRetryMs: 2_000,
  shutdownTimeoutMs: 25_000,
  callTimeoutMs: 10_000,
  passes: {
    timeoutMs: 60_000,
    workers: 4,
    namespaceWorkers: 2,
    maxAnswerBytes: 8 * 1024 * 1024,
    maxPassBytes: 16 * 1024 * 1024,
    maxPendingPods: 5000
  },
  windows: { leaseMs: 90_000, heartbeatMs: 360_000, startupMs: 90_000 },
  permittedNodeKeys: [],
  cellPools: true,
  activity: {
    prometheusURL: undefined,
    stops: false,
    roundMs: 60_000,
    refreshMs: 300_000,
    queryTimeoutMs: 10_000,
    maxAnswerBytes: 16 * 1024 * 1024
  }
}

t.test('with nothing set: the documented defaults', async (t) => {
  t.same(readAgentConfig({}, HOST), DEFAULTS)
})

t.test('an empty variable means its default (as the chart writes WATCH_NAMESPACE: "")', async (t) => {
  const empty = Object.fromEntries(
    [
      'PORT',
      'LOG_LEVEL',
      'WATCH_NAMESPACE',
      'RESYNC_SECONDS',
      'LEADER_ELECTION',
      'LEASE_NAMESPACE',
      'POD_NAMESPACE',
      'LEASE_NAME',
      'POD_NAME',
      'LEADER_ELECTION_RETRY_SECONDS',
      'SHUTDOWN_TIMEOUT_SECONDS',
      'AGENT_CALL_TIMEOUT_SECONDS',
      'AGENT_PASS_TIMEOUT_SECONDS',
      'AGENT_PASS_WORKERS',
      'AGENT_NAMESPACE_PASS_WORKERS',
      'AGENT_MAX_ANSWER_BYTES',
      'AGENT_MAX_PASS_BYTES',
      'AGENT_MAX_PENDING_PODS',
      'PERMITTED_NODE_KEYS',
      'PROMETHEUS_URL',
      'ACTIVITY_STOPS',
      'CELL_POOLS',
      'ACTIVITY_ROUND_SECONDS',
      'ACTIVITY_STATUS_REFRESH_SECONDS',
      'ACTIVITY_QUERY_TIMEOUT_SECONDS',
      'ACTIVITY_MAX_ANSWER_BYTES'
    ].map((name) => [name, ''])
  )
  t.same(readAgentConfig(empty, HOST), DEFAULTS)
})

t.test('every setting is read', async (t) => {
  const config = readAgentConfig(
    {
      PORT: '9000',
      LOG_LEVEL: 'debug',
      WATCH_NAMESPACE: 'tenant-a',
      RESYNC_SECONDS: '30',
      LEADER_ELECTION: 'false',
      POD_NAMESPACE: 'gpuhooks-system',
      LEASE_NAME: 'gpuhooks-agent',
      POD_NAME: 'gpuhooks-agent-7f9c',
      LEADER_ELECTION_RETRY_SECONDS: '8',
      SHUTDOWN_TIMEOUT_SECONDS: '50',
      AGENT_CALL_TIMEOUT_SECONDS: '3',
      AGENT_PASS_TIMEOUT_SECONDS: '20',
      AGENT_PASS_WORKERS: '16',
      AGENT_NAMESPACE_PASS_WORKERS: '3',
      AGENT_MAX_ANSWER_BYTES: '1048576',
      AGENT_MAX_PASS_BYTES: '4194304',
      AGENT_MAX_PENDING_PODS: '200',
      AGENT_LEASE_STALE_SECONDS: '8',
      AGENT_HEARTBEAT_STALE_SECONDS: '16',
      AGENT_STARTUP_GRACE_SECONDS: '0',
      PERMITTED_NODE_KEYS: ' node-restriction.kubernetes.io/ , node-role.kubernetes.io/master,,',
      PROMETHEUS_URL: 'http://prometheus.monitoring:9090/prom/',
      CELL_POOLS: 'false',
      ACTIVITY_STOPS: 'true',
      ACTIVITY_ROUND_SECONDS: '30',
      ACTIVITY_STATUS_REFRESH_SECONDS: '120',
      ACTIVITY_QUERY_TIMEOUT_SECONDS: '5',
      ACTIVITY_MAX_ANSWER_BYTES: '1048576'
    },
    HOST
  )
  t.same(config, {
    port: 9000,
    logLevel: 'debug',
    watchNamespace: 'tenant-a',
    resyncMs: 30_000,
    leaderElection: false,
    lease: { namespace: 'gpuhooks-system', name: 'gpuhooks-agent' },
    identity: 'gpuhooks-agent-7f9c',
    electionRetryMs: 8_000,
    shutdownTimeoutMs: 50_000,
    callTimeoutMs: 3_000,
    passes: { timeoutMs: 20_000, workers: 16, namespaceWorkers: 3, maxAnswerBytes: 1048576, maxPassBytes: 4194304, maxPendingPods: 200 },
    windows: { leaseMs: 8_000, heartbeatMs: 16_000, startupMs: 0 },
    permittedNodeKeys: ['node-restriction.kubernetes.io/', 'node-role.kubernetes.io/master'],
    cellPools: false,
    activity: {
      prometheusURL: 'http://prometheus.monitoring:9090/prom',
      stops: true,
      roundMs: 30_000,
      refreshMs: 120_000,
      queryTimeoutMs: 5_000,
      maxAnswerBytes: 1048576
    }
  })
})

t.test('LEASE_NAMESPACE wins over POD_NAMESPACE', async (t) => {
  t.same(readAgentConfig({ LEASE_NAMESPACE: 'leases', POD_NAMESPACE: 'pods' }, HOST).lease, {
    namespace: 'leases',
    name: 'gpuhooks-workload-agent'
  })
})

const refused: { env: NodeJS.ProcessEnv; problem: string }[] = [
  { env: { AGENT_CALL_TIMEOUT_SECONDS: 'abc' }, problem: 'AGENT_CALL_TIMEOUT_SECONDS=abc must be an integer from 1 to 300' },
  { env: { AGENT_CALL_TIMEOUT_SECONDS: '0' }, problem: 'AGENT_CALL_TIMEOUT_SECONDS=0 must be an integer from 1 to 300' },
  { env: { RESYNC_SECONDS: '0.5' }, problem: 'RESYNC_SECONDS=0.5 must be an integer from 1 to 3600' },
  { env: { RESYNC_SECONDS: '-3' }, problem: 'RESYNC_SECONDS=-3 must be an integer from 1 to 3600' },
  { env: { PORT: '99999' }, problem: 'PORT=99999 must be an integer from 0 to 65535' },
  { env: { SHUTDOWN_TIMEOUT_SECONDS: '0' }, problem: 'SHUTDOWN_TIMEOUT_SECONDS=0 must be an integer from 1 to 3600' },
  {
    env: { LEADER_ELECTION_RETRY_SECONDS: '9' },
    problem: 'LEADER_ELECTION_RETRY_SECONDS=9 must be an integer from 1 to 8 (the leader renews its Lease every round and must within 10 s)'
  },
  { env: { AGENT_LEASE_STALE_SECONDS: '0' }, problem: 'AGENT_LEASE_STALE_SECONDS=0 must be an integer from 1 to 3600' },
  { env: { LEADER_ELECTION: 'no' }, problem: 'LEADER_ELECTION=no must be true or false' },
  {
    env: { PERMITTED_NODE_KEYS: 'gpu.example.com/ok,bad key' },
    problem:
      'PERMITTED_NODE_KEYS entry "bad key" is neither a label key (an optional DNS subdomain prefix and /, then a name) nor a prefix (a DNS subdomain and /)'
  },
  { env: { LOG_LEVEL: 'verbose' }, problem: 'LOG_LEVEL=verbose must be one of fatal, error, warn, info, debug, trace, silent' },
  {
    env: { WATCH_NAMESPACE: 'team/../kube-system' },
    problem: 'WATCH_NAMESPACE=team/../kube-system must be a namespace name (a DNS label), or empty for every namespace'
  },
  { env: { POD_NAMESPACE: 'Bad_Namespace' }, problem: 'POD_NAMESPACE=Bad_Namespace must be a namespace name (a DNS label)' },
  { env: { LEASE_NAME: 'agent..lease' }, problem: 'LEASE_NAME=agent..lease must be a Lease name (a DNS subdomain)' },
  { env: { AGENT_PASS_TIMEOUT_SECONDS: '0' }, problem: 'AGENT_PASS_TIMEOUT_SECONDS=0 must be an integer from 1 to 3600' },
  { env: { AGENT_PASS_WORKERS: '0' }, problem: 'AGENT_PASS_WORKERS=0 must be an integer from 1 to 256' },
  {
    env: { AGENT_PASS_WORKERS: '2', AGENT_NAMESPACE_PASS_WORKERS: '3' },
    problem: 'AGENT_NAMESPACE_PASS_WORKERS=3 must be an integer from 1 to 2 (at most AGENT_PASS_WORKERS=2)'
  },
  { env: { AGENT_MAX_ANSWER_BYTES: '1000' }, problem: 'AGENT_MAX_ANSWER_BYTES=1000 must be an integer from 65536 to 1073741824' },
  {
    env: { AGENT_MAX_ANSWER_BYTES: '1048576', AGENT_MAX_PASS_BYTES: '65536' },
    problem: 'AGENT_MAX_PASS_BYTES=65536 must be an integer from 1048576 to 4294967296 (at least AGENT_MAX_ANSWER_BYTES=1048576)'
  },
  { env: { AGENT_MAX_PENDING_PODS: '0' }, problem: 'AGENT_MAX_PENDING_PODS=0 must be an integer from 1 to 1000000' },
  { env: { PROMETHEUS_URL: 'prometheus:9090' }, problem: 'PROMETHEUS_URL=prometheus:9090 must be an http or https URL' },
  { env: { PROMETHEUS_URL: 'not a url' }, problem: 'PROMETHEUS_URL=not a url must be an http or https URL' },
  {
    env: { PROMETHEUS_URL: 'http://admin:secret@prometheus:9090' },
    problem: 'PROMETHEUS_URL must not carry credentials (they would be logged and written to status)'
  },
  {
    env: { PROMETHEUS_URL: 'http://prometheus:9090/?x=1' },
    problem: 'PROMETHEUS_URL=http://prometheus:9090/?x=1 must have no query or fragment'
  },
  { env: { ACTIVITY_STOPS: 'yes' }, problem: 'ACTIVITY_STOPS=yes must be true or false' },
  { env: { CELL_POOLS: 'no' }, problem: 'CELL_POOLS=no must be true or false' },
  { env: { CELL_POOLS: 'False' }, problem: 'CELL_POOLS=False must be true or false' },
  {
    env: { CELL_POOLS: 'false' },
    problem: 'CELL_POOLS=false with neither PROMETHEUS_URL nor ACTIVITY_STOPS=true leaves the agent nothing to do'
  },
  {
    env: { CELL_POOLS: 'false', ACTIVITY_STOPS: 'false' },
    problem: 'CELL_POOLS=false with neither PROMETHEUS_URL nor ACTIVITY_STOPS=true leaves the agent nothing to do'
  },
  { env: { ACTIVITY_ROUND_SECONDS: '1' }, problem: 'ACTIVITY_ROUND_SECONDS=1 must be an integer from 5 to 3600' },
  {
    env: { ACTIVITY_ROUND_SECONDS: '120', ACTIVITY_STATUS_REFRESH_SECONDS: '60' },
    problem: 'ACTIVITY_STATUS_REFRESH_SECONDS=60 must be an integer from 120 to 86400 (at least ACTIVITY_ROUND_SECONDS=120)'
  }
]

for (const row of refused) {
  t.test(`refused: ${Object.entries(row.env)[0]?.join('=') ?? ''}`, async (t) => {
    t.throws(() => readAgentConfig(row.env, HOST), { message: `invalid environment: ${row.problem}` })
  })
}

t.test('every problem is reported at once, in one error', async (t) => {
  t.throws(
    () =>
      readAgentConfig(
        { PORT: 'http', RESYNC_SECONDS: 'often', AGENT_CALL_TIMEOUT_SECONDS: 'abc', LEADER_ELECTION: 'yes', LOG_LEVEL: 'loud' },
        HOST
      ),
    {
      message:
        'invalid environment: PORT=http must be an integer from 0 to 65535; ' +
        'LOG_LEVEL=loud must be one of fatal, error, warn, info, debug, trace, silent; ' +
        'LEADER_ELECTION=yes must be true or false; ' +
        'RESYNC_SECONDS=often must be an integer from 1 to 3600; ' +
        'AGENT_CALL_TIMEOUT_SECONDS=abc must be an integer from 1 to 300'
    }
  )
})

t.test('a Lease name may be a dotted subdomain, a namespace may not', async (t) => {
  t.equal(readAgentConfig({ LEASE_NAME: 'agent.gpuhooks.example' }, HOST).lease.name, 'agent.gpuhooks.example')
  t.throws(() => readAgentConfig({ WATCH_NAMESPACE: 'a.b' }, HOST), /WATCH_NAMESPACE=a\.b/)
})

t.test('the status refresh defaults to 300 s, or the round when that is longer', async (t) => {
  t.equal(readAgentConfig({ ACTIVITY_ROUND_SECONDS: '600' }, HOST).activity.refreshMs, 600_000)
  t.equal(readAgentConfig({ ACTIVITY_ROUND_SECONDS: '10' }, HOST).activity.refreshMs, 300_000)
})

t.test('without cell pools, the activity controller alone: stops, observation, or both', async (t) => {
  t.equal(readAgentConfig({ CELL_POOLS: 'false', ACTIVITY_STOPS: 'true' }, HOST).cellPools, false)
  const observing = readAgentConfig({ CELL_POOLS: 'false', PROMETHEUS_URL: 'http://prometheus:9090' }, HOST)
  t.match(observing, { cellPools: false, activity: { prometheusURL: 'http://prometheus:9090', stops: false } })
  t.equal(activityOn(observing.activity), true)
  t.equal(activityOn(readAgentConfig({}, HOST).activity), false, 'with cell pools, the activity controller is optional')
  t.equal(readAgentConfig({ CELL_POOLS: 'true' }, HOST).cellPools, true)
})

t.test('a wrong PROMETHEUS_URL without cell pools is named once, for what it is', async (t) => {
  t.throws(() => readAgentConfig({ CELL_POOLS: 'false', PROMETHEUS_URL: 'ftp://x' }, HOST), {
    message: 'invalid environment: PROMETHEUS_URL=ftp://x must be an http or https URL'
  })
})
