/**
 * A stand-in for a workload cluster's API server over real HTTPS on 127.0.0.1, for the agent's
 * transport tests: the test gives the handler, the server counts what it was asked and how many
 * body bytes it managed to send before the client closed the connection.
 */
import { createServer, type Server } from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { issueCa, issueCert } from '../../hooks/certs/issue.ts'
import type { ReducedKubeconfig } from '../../hooks/agent/workload/kubeconfig.ts'

/** One CA and serving certificate for 127.0.0.1, made once per test file. */
let pki: { caCert: string; cert: string; key: string } | undefined
function serving(): { caCert: string; cert: string; key: string } {
  if (pki === undefined) {
    const now = new Date()
    const ca = issueCa(now, 1, 'fake-apiserver-ca')
    pki = { caCert: ca.caCert, ...issueCert(ca, ['127.0.0.1'], now, 1) }
  }
  return pki
}

/** A request as the server saw it. */
export interface SeenRequest {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void

/** A running fake API server. */
export interface FakeApiServer {
  url: string
  /** Every request, in order. */
  seen: SeenRequest[]
  /** Body bytes written to sockets and accepted by them (a write still pending when the client closed is not counted). */
  served(): number
  /** Connections closed by either side. */
  closed(): number
  /** Resolves once `count` connections have closed. */
  whenClosed(count: number): Promise<void>
  /** A kubeconfig, reduced as the agent keeps it, that trusts this server and sends `token`. */
  kubeconfig(token?: string): ReducedKubeconfig
  /** Writes `total` bytes of `fill` after `prefix`, waiting for the socket to drain, until done or closed. */
  stream(res: ServerResponse, prefix: string, total: number, fill?: string): void
  close(): Promise<void>
}

/** Starts a server whose every request `handler` answers. */
export async function fakeApiServer(handler: Handler): Promise<FakeApiServer> {
  const { caCert, cert, key } = serving()
  const seen: SeenRequest[] = []
  let served = 0
  let closed = 0
  const waiting: { count: number; resolve: () => void }[] = []
  const server: Server = createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body })
      handler(req, res, body)
    })
  })
  server.on('connection', (socket) =>
    socket.on('close', () => {
      closed++
      for (const w of waiting.filter((w) => w.count <= closed)) {
        waiting.splice(waiting.indexOf(w), 1)
        w.resolve()
      }
    })
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `https://127.0.0.1:${port}`,
    seen,
    served: () => served,
    closed: () => closed,
    whenClosed: (count) => (closed >= count ? Promise.resolve() : new Promise((resolve) => waiting.push({ count, resolve }))),
    kubeconfig: (token = 'secret-token') => ({
      server: `https://127.0.0.1:${port}`,
      caData: Buffer.from(caCert).toString('base64'),
      token
    }),
    stream(res, prefix, total, fill = ' ') {
      const chunk = Buffer.from(fill.repeat(Math.ceil(65536 / fill.length)).slice(0, 65536))
      let sent = 0
      let gone = false
      res.on('close', () => (gone = true))
      const write = (data: Buffer): boolean =>
        res.write(data, (error) => {
          if (error === undefined || error === null) served += data.length
        })
      write(Buffer.from(prefix))
      const pump = (): void => {
        while (!gone && sent < total) {
          const part = chunk.subarray(0, Math.min(chunk.length, total - sent))
          sent += part.length
          if (!write(part)) return void res.once('drain', pump)
        }
        if (!gone) res.end()
      }
      pump()
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
