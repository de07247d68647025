/**
 * The workload agent process (`npm run agent`; workload.md, "The agent process").
 *
 * Environment:
 * - `KUBECONFIG` or the in-cluster service account: the infrastructure cluster.
 * - `WATCH_NAMESPACE`: serve CellNodeSets (and read Secrets) of this namespace only; default all.
 * - `RESYNC_SECONDS` (15): a pass per CellNodeSet at least this often, and on every change.
 * - `PORT` (8081): `/healthz`, `/readyz` (200 once the informers have synced, on the standby too:
 *   probes.ts), `/metrics`. `LOG_LEVEL` (info): pino, JSON lines.
 * - `LEASE_NAMESPACE` (else `POD_NAMESPACE`, else `default`), `LEASE_NAME`
 *   (`gpuhooks-workload-agent`), `POD_NAME` (else the host name): leader election; only the leader
 *   runs passes. `LEADER_ELECTION=false` turns it off (one replica only).
 * - `AGENT_LEASE_STALE_SECONDS` (90), `AGENT_HEARTBEAT_STALE_SECONDS` (360),
 *   `AGENT_STARTUP_GRACE_SECONDS` (90): the liveness windows. workload.md fixes them; tests
 *   shorten them to see a sweep without waiting minutes.
 * - `AGENT_CALL_TIMEOUT_SECONDS` (10): deadline of each API call.
 *
 * SIGTERM or SIGINT: the pass in progress finishes, the Lease is released, the process exits 0.
 */
import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { homedir } from 'node:os'
import { join } from 'node:path'
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  makeInformer,
  type KubernetesObject,
  type V1Lease
} from '@kubernetes/client-node'
import { processLogger } from '../logger.ts'
import { WORKLOAD_KUBECONFIG_LABEL } from '../api/cellnodeset.ts'
import { isRecord } from '../k8s/objects.ts'
import { ClientCache, infraApi, plain, statusCode, workloadApi, workloadKubeConfig, type WorkloadApi } from './clients.ts'
import { LeaderElector, type LeaseApi } from './leader.ts'
import { startInformer } from './informer.ts'
import { HeartbeatTracker } from './liveness.ts'
import { createAgentMetrics, type AgentMetrics } from './metrics.ts'
import { runPass } from './pass.ts'
import { readAgentConfig } from './config.ts'
import { readiness } from './probes.ts'

type Cache = {
  get(name: string, namespace?: string): KubernetesObject | undefined
  list(namespace?: string): ReadonlyArray<KubernetesObject>
}

/** The agent: informers, the pass loop, leader election, probes and metrics. */
async function main(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = readAgentConfig(env)
  const log = processLogger({ level: config.logLevel, base: { component: 'workload-agent' } })
  const metrics: AgentMetrics = createAgentMetrics(true)
  // Without any of these the client falls back to http://localhost:8080 and every call fails with
  // a message about TLS; saying what is missing is clearer than retrying that for ever.
  if ((env.KUBECONFIG ?? '') === '' && (env.KUBERNETES_SERVICE_HOST ?? '') === '' && !existsSync(join(homedir(), '.kube', 'config'))) {
    throw new Error('no infrastructure cluster: set KUBECONFIG, or run in a Pod (KUBERNETES_SERVICE_HOST and its service account token)')
  }
  const kc = new KubeConfig()
  kc.loadFromDefault()
  const infra = infraApi(kc)
  const custom = kc.makeApiClient(CustomObjectsApi)
  const core = kc.makeApiClient(CoreV1Api)
  const coordination = kc.makeApiClient(CoordinationV1Api)
  let stopping = false
  const dirty = new Set<string>()
  let wake: (() => void) | undefined
  const poke = (): void => {
    wake?.()
  }

  const ns = config.watchNamespace
  const cnsPath =
    ns === undefined ? '/apis/cells.kubeswift.io/v1alpha1/cellnodesets' : `/apis/cells.kubeswift.io/v1alpha1/namespaces/${ns}/cellnodesets`
  const cnsInformer = makeInformer<KubernetesObject>(
    kc,
    cnsPath,
    () =>
      (ns === undefined
        ? custom.listClusterCustomObject({ group: 'cells.kubeswift.io', version: 'v1alpha1', plural: 'cellnodesets' })
        : custom.listNamespacedCustomObject({
            group: 'cells.kubeswift.io',
            version: 'v1alpha1',
            namespace: ns,
            plural: 'cellnodesets'
          })) as never
  )
  const selector = `${WORKLOAD_KUBECONFIG_LABEL}=true`
  const secretPath = ns === undefined ? '/api/v1/secrets' : `/api/v1/namespaces/${ns}/secrets`
  const secretInformer = makeInformer<KubernetesObject>(
    kc,
    secretPath,
    async () =>
      ns === undefined
        ? core.listSecretForAllNamespaces({ labelSelector: selector })
        : core.listNamespacedSecret({ namespace: ns, labelSelector: selector }),
    selector
  )
  const cnsCache: Cache = cnsInformer
  const secretCache: Cache = secretInformer
  const keyOf = (obj: KubernetesObject): string => `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`

  const cnsState = startInformer(
    log,
    'cellnodesets',
    cnsInformer,
    (obj) => {
      dirty.add(keyOf(obj))
      poke()
    },
    () => stopping
  )
  const secretState = startInformer(
    log,
    'secrets',
    secretInformer,
    (secret) => {
      // A changed kubeconfig: every CellNodeSet that names this Secret gets a pass.
      for (const cns of cnsCache.list()) {
        const spec = (cns as { spec?: unknown }).spec
        if (
          cns.metadata?.namespace === secret.metadata?.namespace &&
          isRecord(spec) &&
          isRecord(spec.kubeconfigSecretRef) &&
          spec.kubeconfigSecretRef.name === secret.metadata?.name
        )
          dirty.add(keyOf(cns))
      }
      poke()
    },
    () => stopping
  )

  // One client per workload cluster Secret, rebuilt when the Secret's resourceVersion changes.
  const clients = new ClientCache<WorkloadApi>((reduced) => workloadApi(workloadKubeConfig(reduced)))
  const trackers = new Map<string, HeartbeatTracker>()
  const workload = (secretKey: string, resourceVersion: string, reduced: Parameters<typeof workloadKubeConfig>[0]): WorkloadApi => {
    const { client, built } = clients.get(secretKey, resourceVersion, reduced)
    if (built) log.info({ secret: secretKey, resourceVersion }, 'workload cluster client built from the kubeconfig Secret')
    return client
  }

  const leaseApi: LeaseApi = {
    async get() {
      try {
        return plain(await coordination.readNamespacedLease(config.lease))
      } catch (error) {
        if (statusCode(error) === 404) return undefined
        throw error
      }
    },
    async create(lease) {
      await coordination.createNamespacedLease({ namespace: config.lease.namespace, body: lease as unknown as V1Lease })
    },
    async replace(lease) {
      await coordination.replaceNamespacedLease({ ...config.lease, body: lease as unknown as V1Lease })
    }
  }
  const elector = new LeaderElector(leaseApi, config.lease, config.identity, () => Date.now())
  const isLeader = (): boolean => !config.leaderElection || elector.isLeader()
  let wasLeader = false
  const electionLoop = async (): Promise<void> => {
    while (!stopping && config.leaderElection) {
      const result = await elector.tick()
      if (result.step === 'error') log.warn({ err: result.error }, 'leader election round failed')
      const leading = elector.isLeader()
      if (leading !== wasLeader) {
        log.info({ identity: config.identity, lease: config.lease }, leading ? 'leading: passes start' : 'not leading: passes stop')
        wasLeader = leading
        if (leading) poke()
      }
      metrics.leader.set(leading ? 1 : 0)
      await new Promise((resolve) => setTimeout(resolve, 2000))
    }
  }
  if (!config.leaderElection) metrics.leader.set(1)

  let passing = false
  const passLoop = async (): Promise<void> => {
    let nextResync = Date.now()
    while (!stopping) {
      if (Date.now() >= nextResync) {
        for (const cns of cnsCache.list()) dirty.add(keyOf(cns))
        nextResync = Date.now() + config.resyncMs
      }
      if (dirty.size === 0 || !isLeader() || !cnsState.synced() || !secretState.synced()) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(100, Math.min(1000, nextResync - Date.now())))
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        wake = undefined
        continue
      }
      const keys = [...dirty]
      dirty.clear()
      for (const key of keys) {
        if (stopping || !isLeader()) break
        const [namespace, name] = key.split('/') as [string, string]
        const object = cnsCache.get(name, namespace)
        if (object === undefined) {
          trackers.delete(key)
          metrics.reachable.remove({ namespace, name })
          continue
        }
        passing = true
        const end = metrics.passSeconds.startTimer()
        try {
          const report = await runPass(plain(object), {
            infra,
            secret: (n, s) => plain(secretCache.get(s, n)),
            workload,
            tracker: (k) => {
              let tracker = trackers.get(k)
              if (tracker === undefined) trackers.set(k, (tracker = new HeartbeatTracker(config.windows.startupMs)))
              return tracker
            },
            windows: config.windows,
            clock: () => new Date()
          })
          if (!report.served) {
            log.debug({ cellNodeSet: key, why: report.notServed }, 'not served')
          } else {
            metrics.reachable.set({ namespace, name }, report.reachable === 'Reachable' ? 1 : 0)
            if (report.reachable !== 'Reachable' && report.reachable !== undefined) metrics.errors.inc({ reason: report.reachable })
            if (report.nodeWrites.patch > 0) metrics.nodeWrites.inc({ action: 'patch' }, report.nodeWrites.patch)
            if (report.nodeWrites.delete > 0) metrics.nodeWrites.inc({ action: 'delete' }, report.nodeWrites.delete)
            for (const error of report.errors) metrics.errors.inc({ reason: error.reason })
            const level = report.errors.length > 0 || report.reachable !== 'Reachable' ? 'warn' : 'debug'
            log[level]({ cellNodeSet: key, ...report }, 'pass')
          }
        } catch (error) {
          metrics.errors.inc({ reason: 'Internal' })
          log.error(
            { cellNodeSet: key, err: error instanceof Error ? { message: error.message, stack: error.stack } : String(error) },
            'pass failed'
          )
        } finally {
          end()
          passing = false
        }
      }
    }
  }

  const server: Server = createServer((req, res) => {
    const reply = (code: number, body: string, type = 'application/json'): void => {
      res.writeHead(code, { 'content-type': type })
      res.end(body)
    }
    const path = (req.url ?? '/').split('?')[0]
    if (req.method !== 'GET') return reply(405, '{"error":"method not allowed"}')
    if (path === '/healthz') return reply(200, '{"status":"ok"}')
    if (path === '/readyz') {
      const { code, body } = readiness({
        stopping,
        cellNodeSetsSynced: cnsState.synced(),
        secretsSynced: secretState.synced(),
        leader: isLeader()
      })
      return reply(code, JSON.stringify(body))
    }
    if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => reply(200, text, metrics.registry.contentType),
        () => reply(500, '{"error":"metrics"}')
      )
      return
    }
    reply(404, '{"error":"not found"}')
  })
  server.on('clientError', (_error, socket) => {
    socket.destroy()
  })
  server.on('error', (error) => {
    log.error({ err: error.message }, 'HTTP server error')
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(config.port, '::', () => {
      server.off('error', reject)
      resolve()
    })
  })
  log.info({ port: config.port, identity: config.identity, watchNamespace: config.watchNamespace ?? '(all)' }, 'workload agent listening')

  const loops = Promise.all([passLoop(), electionLoop()])
  const shutdown = (signal: string): void => {
    if (stopping) return
    stopping = true
    log.info({ signal, passInProgress: passing }, 'stopping: the pass in progress finishes')
    poke()
    const timer = setTimeout(() => {
      log.error('shutdown timed out; exiting')
      process.exit(1)
    }, 25_000)
    timer.unref()
    loops
      .then(async () => {
        if (config.leaderElection && (await elector.release())) log.info({ lease: config.lease }, 'leader Lease released')
        await Promise.allSettled([cnsInformer.stop(), secretInformer.stop()])
        await new Promise<void>((resolve) => server.close(() => resolve()))
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
