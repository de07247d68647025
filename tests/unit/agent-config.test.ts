/**
 * The agent's settings: every variable checked at start, every problem named with its variable
 * and rule, all of them in one error, as the hook service does.
 */
import t from 'tap'
import { readAgentConfig, type AgentConfig } from '../../hooks/agent/config.ts'

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
  windows: { leaseMs: 90_000, heartbeatMs: 360_000, startupMs: 90_000 }
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
      'AGENT_CALL_TIMEOUT_SECONDS'
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
      AGENT_LEASE_STALE_SECONDS: '8',
      AGENT_HEARTBEAT_STALE_SECONDS: '16',
      AGENT_STARTUP_GRACE_SECONDS: '0'
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
    windows: { leaseMs: 8_000, heartbeatMs: 16_000, startupMs: 0 }
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
  { env: { LOG_LEVEL: 'verbose' }, problem: 'LOG_LEVEL=verbose must be one of fatal, error, warn, info, debug, trace, silent' },
  {
    env: { WATCH_NAMESPACE: 'team/../kube-system' },
    problem: 'WATCH_NAMESPACE=team/../kube-system must be a namespace name (a DNS label), or empty for every namespace'
  },
  { env: { POD_NAMESPACE: 'Bad_Namespace' }, problem: 'POD_NAMESPACE=Bad_Namespace must be a namespace name (a DNS label)' },
  { env: { LEASE_NAME: 'agent..lease' }, problem: 'LEASE_NAME=agent..lease must be a Lease name (a DNS subdomain)' }
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
