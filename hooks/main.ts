/**
 * The process: read the environment, listen, shut down gracefully (docs/README.md, "Process
 * contract").
 *
 * - `PORT` (default 8080): hooks, probes and metrics over plain HTTP on `::` (IPv4 too).
 * - `WEBHOOK_PORT` (default 9443): admission over HTTPS when `TLS_CERT_FILE` and `TLS_KEY_FILE`
 *   name a certificate and key; off otherwise, said once in the log. The certificate is read at
 *   start; a rotated one takes effect when the Pod restarts.
 * - `LOG_LEVEL` (default info), `BODY_LIMIT` (bytes, default 16 MiB), and the load, nesting and
 *   time bounds of `config.ts` (docs/service.md).
 * - `PERMITTED_NODE_KEYS` (default none): Node label and taint keys, or prefixes ending in `/`,
 *   that a cell pool may ask for though hooks/k8s/node-keys.ts restricts them; every hook is given
 *   them (the cell pool's admission and sync honour them; the workload agent reads the same variable).
 * - Shutdown, within Kubernetes' default 30 s grace period: on SIGTERM or SIGINT `/readyz` answers
 *   503 for `SHUTDOWN_DELAY_SECONDS` (default 5) while both listeners still serve, so endpoints are
 *   removed before any connection is refused; then both listeners stop accepting, close idle
 *   keep-alive connections, finish what is in flight, and the process exits 0. If all of that
 *   outlasts `SHUTDOWN_TIMEOUT_SECONDS` (default 25) it exits 1. A second signal skips what is
 *   left of the delay.
 */
import { readFileSync } from 'node:fs'
import { processLogger } from './logger.ts'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './server/app.ts'
import { readConfig } from './server/config.ts'
import { createMetrics } from './server/metrics.ts'
import { buildRoutes } from './server/routes.ts'

/** Starts both listeners and installs the signal handlers. */
async function main(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = readConfig(env)
  const logger = processLogger({ level: config.logLevel })
  const metrics = createMetrics(true)
  let draining = false
  const ready = (): boolean => !draining
  const common = {
    routes: buildRoutes(config.context),
    metrics,
    bodyLimit: config.bodyLimit,
    ready,
    loggerInstance: logger,
    limits: config.limits
  }

  const apps: FastifyInstance[] = []
  let markStarted: () => void = () => undefined
  const started = new Promise<void>((resolve) => (markStarted = resolve))
  let closing = false
  const close = (): void => {
    if (closing) return
    closing = true
    logger.info('listeners closing: finishing in-flight requests')
    // A signal during start-up closes what has started once start-up is over.
    started
      .then(() => Promise.all(apps.map((app) => app.close())))
      .then(
        () => {
          logger.info('stopped')
          process.exit(0)
        },
        (err: unknown) => {
          logger.error({ err }, 'error while stopping')
          process.exit(1)
        }
      )
  }
  let delay: NodeJS.Timeout | undefined
  const shutdown = (signal: string): void => {
    if (draining) {
      logger.info({ signal }, 'second signal: closing now')
      clearTimeout(delay)
      close()
      return
    }
    draining = true
    logger.info({ signal, delayMs: config.shutdownDelayMs }, 'draining: /readyz answers 503; the listeners close after the delay')
    const timer = setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'drain timed out; exiting')
      process.exit(1)
    }, config.shutdownTimeoutMs)
    timer.unref()
    delay = setTimeout(close, config.shutdownDelayMs)
  }
  // Installed before the first listener answers: a SIGTERM that arrives as soon as a listener
  // is up (a test, or a Pod deleted at once) must drain, not kill node outright.
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))

  const hooks = await buildApp({ ...common, surfaces: ['hooks'] })
  apps.push(hooks)
  const hooksAddress = await hooks.listen({ host: '::', port: config.port })
  logger.info({ address: hooksAddress }, 'hooks listening over HTTP')
  // fastify removes its listen-time error listener once listening; a later server error (accept
  // failing with EMFILE, say) would otherwise crash the process.
  hooks.server.on('error', (err) => logger.error({ err }, 'hooks listener error'))

  if (config.tls === undefined) {
    logger.info('admission listener off: TLS_CERT_FILE and TLS_KEY_FILE are not set')
  } else {
    const https = { cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile) }
    const admission = await buildApp({ ...common, surfaces: ['admission'], serveMetrics: false, https })
    apps.push(admission)
    const admissionAddress = await admission.listen({ host: '::', port: config.webhookPort })
    logger.info({ address: admissionAddress }, 'admission listening over HTTPS')
    admission.server.on('error', (err) => logger.error({ err }, 'admission listener error'))
    // A failed TLS handshake (an API server holding the wrong caBundle) is otherwise silent.
    admission.server.on('tlsClientError', (err) => logger.warn({ err }, 'TLS handshake failed'))
  }

  markStarted()
}

main().catch((err: unknown) => {
  // Startup failures (bad environment, port in use, unreadable certificate) end the process.
  console.error(JSON.stringify({ level: 'fatal', msg: err instanceof Error ? err.message : String(err) }))
  process.exit(1)
})
