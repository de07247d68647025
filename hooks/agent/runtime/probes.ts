/**
 * The agent's `/readyz` answer. Readiness means "this process is healthy and could serve if it
 * were elected": its informers have listed once and it is not shutting down. Leadership is
 * reported but does not count, so the standby of a two-replica Deployment is ready too (a
 * readiness that required the Lease would leave one replica unready for ever and make
 * `helm install --wait` and rollouts hang); which replica runs passes is the Lease's business.
 * Only the informers of what runs count: with cell pools, the CellNodeSet and CellInfrastructure
 * informers (not the InstanceActivity one, so that a cluster without that CRD keeps its agent);
 * without (`CELL_POOLS=false`), the InstanceActivity informer, the agent's only work.
 */
import { createServer, type Server } from 'node:http'
import type { LogTo } from '../../logger.ts'
import type { Registry } from 'prom-client'

/** What `/readyz` looks at. */
export interface ReadinessState {
  stopping: boolean
  /** The CellNodeSet informer has listed; absent (no cell pools) counts as listed. */
  cellNodeSetsSynced?: boolean
  /** The CellInfrastructure informer (Cluster API cells) has listed; absent counts as listed. */
  cellInfrastructuresSynced?: boolean
  /** The InstanceActivity informer has listed; absent (it does not count) counts as listed. */
  instanceActivitiesSynced?: boolean
  leader: boolean
}

/** The `/readyz` status code and JSON body. */
export function readiness(state: ReadinessState): { code: 200 | 503; body: { status: 'ready' | 'not ready'; leader: boolean } } {
  const ready =
    !state.stopping &&
    state.cellNodeSetsSynced !== false &&
    state.cellInfrastructuresSynced !== false &&
    state.instanceActivitiesSynced !== false
  return { code: ready ? 200 : 503, body: { status: ready ? 'ready' : 'not ready', leader: state.leader } }
}

/** What the probe server answers from. */
export interface ProbeSources {
  readiness(): ReadinessState
  /** The Prometheus registry `/metrics` renders. */
  metrics: Pick<Registry, 'metrics' | 'contentType'>
}

/**
 * The agent's HTTP server: `GET /healthz` (the process answers), `GET /readyz` (`readiness`),
 * `GET /metrics` (Prometheus text); 404 for another path, 405 for another method, a query string
 * ignored. Small enough not to need the hook service's fastify: three fixed answers, no body read.
 */
export function probeServer(sources: ProbeSources): Server {
  const server = createServer((req, res) => {
    const reply = (code: number, body: string, type = 'application/json'): void => {
      res.writeHead(code, { 'content-type': type })
      res.end(body)
    }
    const path = (req.url ?? '/').split('?')[0]
    if (req.method !== 'GET') return reply(405, '{"error":"method not allowed"}')
    if (path === '/healthz') return reply(200, '{"status":"ok"}')
    if (path === '/readyz') {
      const { code, body } = readiness(sources.readiness())
      return reply(code, JSON.stringify(body))
    }
    if (path === '/metrics') {
      sources.metrics.metrics().then(
        (text) => reply(200, text, sources.metrics.contentType),
        () => reply(500, '{"error":"metrics"}')
      )
      return
    }
    reply(404, '{"error":"not found"}')
  })
  // A client that sends garbage gets its connection closed, not an answer or a crash.
  server.on('clientError', (_error, socket) => {
    socket.destroy()
  })
  return server
}

/** Listens on `port` (0: any free one) and resolves with the port; later server errors are logged, not thrown. */
export async function listen(server: Server, port: number, log: LogTo<'error'>, host = '::'): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  server.on('error', (error) => {
    log.error({ err: error.message }, 'HTTP server error')
  })
  const address = server.address()
  return typeof address === 'object' && address !== null ? address.port : port
}

/** Stops accepting, closes idle keep-alive connections, and resolves once every connection is closed. */
export function close(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()))
  server.closeIdleConnections()
  return closed
}
