/**
 * Liveness and readiness. Both answer however loaded the process is (they are exempt from the
 * overload check): a kubelet that saw 503s from `/healthz` under load would restart a process
 * that is merely busy.
 *
 * While the process drains (not ready), every answer also closes its connection: a client on a
 * keep-alive connection reconnects, and once the endpoint is gone it reaches another replica; a
 * connection left idle after the listeners closed would otherwise hold the exit up until its
 * keep-alive timeout.
 */
import { shared } from './shared.ts'

/** Options of {@link probesPlugin}. */
export interface ProbesPluginOptions extends Record<string, unknown> {
  /** Readiness; `main` turns it false while draining. */
  ready: () => boolean
}

const exempt = { pressureHandler: (): undefined => undefined }

/** The probes plugin: `GET /healthz`, `GET /readyz`. */
export const probesPlugin = shared<ProbesPluginOptions>('gpuhooks-probes', async (app, { ready }) => {
  app.addHook('onSend', async (_request, reply, payload) => {
    if (!ready()) reply.header('connection', 'close')
    return payload
  })
  app.get('/healthz', { config: exempt }, async () => ({ status: 'ok' }))
  app.get('/readyz', { config: exempt }, async (_request, reply) => {
    if (ready()) return { status: 'ready' }
    return reply.code(503).send({ status: 'draining' })
  })
})
