/**
 * The workload agent process (`npm run agent`; docs/workload.md, "The agent process"): reads its
 * settings (config.ts, where they are listed), wires the informers, the controllers (the cell pool
 * ones unless `CELL_POOLS=false`, cellpools.ts; the activity controller of Instances with
 * `PROMETHEUS_URL` or `ACTIVITY_STOPS`), the election loop and the probe server, and handles
 * signals (style rule 16).
 *
 * SIGTERM or SIGINT: `/readyz` turns 503, the pass in progress finishes, the Lease is released,
 * the informers and the probe server stop, and the process exits 0; past
 * `SHUTDOWN_TIMEOUT_SECONDS` it exits 1.
 */
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { processLogger } from '../logger.ts'
import { leaseApi } from './runtime/clients.ts'
import { systemClock } from './runtime/clock.ts'
import { activityOn, readAgentConfig } from './runtime/config.ts'
import { startCellPools } from './cellpools.ts'
import { instanceActivityInformer, startInformer } from './runtime/informer.ts'
import { ActivityController } from './activity/controller.ts'
import { activityApi } from './activity/client.ts'
import { prometheusClient } from './activity/prometheus.ts'
import { Campaign, DEFAULT_TIMINGS, LeaderElector } from './runtime/leader.ts'
import { createAgentMetrics } from './runtime/metrics.ts'
import { close, listen, probeServer } from './runtime/probes.ts'

/** Starts the agent and installs the signal handlers. */
async function main(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = readAgentConfig(env)
  const log = processLogger({ level: config.logLevel, base: { component: 'workload-agent' } })
  // Without any of these the client falls back to http://localhost:8080 and every call fails with
  // a message about TLS; saying what is missing is clearer than retrying that for ever.
  if ((env.KUBECONFIG ?? '') === '' && (env.KUBERNETES_SERVICE_HOST ?? '') === '' && !existsSync(join(homedir(), '.kube', 'config'))) {
    throw new Error('no infrastructure cluster: set KUBECONFIG, or run in a Pod (KUBERNETES_SERVICE_HOST and its service account token)')
  }
  const kc = new KubeConfig()
  kc.loadFromDefault()
  const clock = systemClock
  const metrics = createAgentMetrics(true)
  let stopping = false

  const elector = config.leaderElection
    ? new LeaderElector(leaseApi(kc, config.lease, config.callTimeoutMs), config.lease, config.identity, () => clock.now(), {
        ...DEFAULT_TIMINGS,
        retryPeriodMs: config.electionRetryMs
      })
    : undefined
  const leading = (): boolean => elector === undefined || elector.isLeader()

  // Cell pools (CELL_POOLS, on by default): their informers list cells.kubeswift.io types.
  const cellPools = config.cellPools ? startCellPools(kc, { config, clock, metrics, log, leading, stopping: () => stopping }) : undefined

  // Instances (docs/workload.md, "Instance activity"): on only with PROMETHEUS_URL or ACTIVITY_STOPS;
  // part of readiness only without cell pools, so that a cluster with cell pools and without the
  // InstanceActivity CRD keeps its agent.
  const instanceActivities = activityOn(config.activity) ? instanceActivityInformer(kc) : undefined
  let activitySynced = (): boolean => false
  const activity =
    instanceActivities === undefined
      ? undefined
      : new ActivityController({
          activities: instanceActivities,
          api: activityApi(kc, config.callTimeoutMs),
          query:
            config.activity.prometheusURL === undefined
              ? undefined
              : prometheusClient(config.activity.prometheusURL, {
                  timeoutMs: config.activity.queryTimeoutMs,
                  maxAnswerBytes: config.activity.maxAnswerBytes
                }),
          config: config.activity,
          active: () => leading() && activitySynced(),
          clock,
          metrics,
          log
        })
  if (instanceActivities !== undefined && activity !== undefined) {
    const onChange = (o: unknown): void => activity.changed(o)
    activitySynced = startInformer(log, 'instanceactivities', instanceActivities, onChange, () => stopping).synced
  }

  const campaign =
    elector === undefined
      ? undefined
      : new Campaign(elector, {
          clock,
          retryMs: config.electionRetryMs,
          log,
          onRound(isLeader, changed) {
            metrics.leader.set(isLeader ? 1 : 0)
            if (changed && isLeader) {
              cellPools?.wake()
              activity?.wake()
            }
            if (changed && !isLeader) cellPools?.standDown()
          }
        })
  if (campaign === undefined) metrics.leader.set(1)

  const server = probeServer({
    readiness: () => ({
      stopping,
      ...(cellPools === undefined ? { instanceActivitiesSynced: activitySynced() } : cellPools.synced()),
      leader: leading()
    }),
    metrics: metrics.registry
  })
  await listen(server, config.port, log)
  log.info(
    {
      port: config.port,
      identity: config.identity,
      watchNamespace: config.watchNamespace ?? '(all)',
      cellPools: config.cellPools,
      activity: { prometheusURL: config.activity.prometheusURL ?? '(off)', stops: config.activity.stops }
    },
    'workload agent listening'
  )

  const loops = Promise.all([cellPools?.run(), activity?.run(), campaign?.run()])
  const shutdown = (signal: string): void => {
    if (stopping) return
    stopping = true
    log.info({ signal, passesInProgress: cellPools?.passing() ?? [] }, 'stopping: the passes in progress finish')
    const timer = setTimeout(() => {
      log.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out; exiting')
      process.exit(1)
    }, config.shutdownTimeoutMs)
    timer.unref()
    campaign?.stop()
    Promise.all([cellPools?.stop(), activity?.stop()])
      .then(() => loops)
      .then(async () => {
        if (elector !== undefined && (await elector.release())) log.info({ lease: config.lease }, 'leader Lease released')
        await Promise.allSettled([cellPools?.stopInformers(), instanceActivities?.stop()])
        await close(server)
        log.info('stopped')
        process.exit(0)
      })
      .catch((error: unknown) => {
        log.error({ err: String(error) }, 'shutdown failed')
        process.exit(1)
      })
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('unhandledRejection', (reason) => {
    metrics.errors.inc({ reason: 'Internal' })
    log.error({ err: String(reason) }, 'unhandled rejection')
  })
}

main().catch((error: unknown) => {
  process.stderr.write(`workload agent failed to start: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
