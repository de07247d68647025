/**
 * The agent's settings from its environment (the list is in main.ts). A bad value stops the
 * process at start with a message naming the variable.
 */
import { hostname } from 'node:os'
import type { LivenessWindows } from './liveness.ts'

/** The agent process settings (documented in main.ts). */
export interface AgentConfig {
  port: number
  resyncMs: number
  watchNamespace: string | undefined
  lease: { namespace: string; name: string }
  identity: string
  leaderElection: boolean
  windows: LivenessWindows
  logLevel: string
}

function seconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name}=${raw} is not a number of seconds`)
  return value
}

/** Reads the environment; a bad value stops the process at start with a message naming it. */
export function readAgentConfig(env: NodeJS.ProcessEnv): AgentConfig {
  const port = Number(env.PORT ?? '8081')
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT=${env.PORT} is not a port`)
  return {
    port,
    resyncMs: seconds(env, 'RESYNC_SECONDS', 15) * 1000,
    watchNamespace: env.WATCH_NAMESPACE === '' ? undefined : env.WATCH_NAMESPACE,
    lease: { namespace: env.LEASE_NAMESPACE ?? env.POD_NAMESPACE ?? 'default', name: env.LEASE_NAME ?? 'gpuhooks-workload-agent' },
    identity: env.POD_NAME ?? `${hostname()}-${process.pid}`,
    leaderElection: env.LEADER_ELECTION !== 'false',
    windows: {
      leaseMs: seconds(env, 'AGENT_LEASE_STALE_SECONDS', 90) * 1000,
      heartbeatMs: seconds(env, 'AGENT_HEARTBEAT_STALE_SECONDS', 360) * 1000,
      startupMs: seconds(env, 'AGENT_STARTUP_GRACE_SECONDS', 90) * 1000
    },
    logLevel: env.LOG_LEVEL ?? 'info'
  }
}
