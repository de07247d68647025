/**
 * The agent's probe server over real HTTP on loopback: the three paths, readiness as the process
 * reports it at the moment of the request, and every other request refused plainly.
 */
import t from 'tap'
import { request } from 'node:http'
import { connect } from 'node:net'
import { close, listen, probeServer } from '../../hooks/agent/runtime/probes.ts'
import type { ReadinessState } from '../../hooks/agent/runtime/probes.ts'

interface Answer {
  status: number
  type: string | undefined
  body: string
}

function ask(port: number, path: string, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }))
    })
    req.on('error', reject)
    req.end()
  })
}

const errors: string[] = []
const log = {
  error: (_o: object, message: string): void => {
    errors.push(message)
  }
}

async function started(state: { current: ReadinessState }, metrics?: () => Promise<string>) {
  const server = probeServer({
    readiness: () => state.current,
    metrics: { contentType: 'text/plain; version=0.0.4; charset=utf-8', metrics: metrics ?? (async () => 'gpuhooks_workload_leader 1\n') }
  })
  const port = await listen(server, 0, log, '127.0.0.1')
  t.teardown(() => close(server))
  return port
}

const ready: ReadinessState = { stopping: false, cellNodeSetsSynced: true, leader: false }
const unsynced: ReadinessState = { ...ready, cellNodeSetsSynced: false }

t.test('/healthz answers 200 whatever the readiness', async (t) => {
  const port = await started({ current: { ...ready, stopping: true } })
  t.same(await ask(port, '/healthz'), { status: 200, type: 'application/json', body: '{"status":"ok"}' })
})

t.test('/readyz follows the state at each request: not ready, ready, then stopping', async (t) => {
  const state = { current: unsynced }
  const port = await started(state)
  t.same(await ask(port, '/readyz'), { status: 503, type: 'application/json', body: '{"status":"not ready","leader":false}' })
  state.current = { ...ready, leader: true }
  t.same(await ask(port, '/readyz?verbose'), { status: 200, type: 'application/json', body: '{"status":"ready","leader":true}' })
  state.current = { ...ready, stopping: true }
  t.equal((await ask(port, '/readyz')).status, 503)
})

t.test('/metrics answers the registry text with its content type; a failing registry is a 500', async (t) => {
  const port = await started({ current: ready })
  t.same(await ask(port, '/metrics'), {
    status: 200,
    type: 'text/plain; version=0.0.4; charset=utf-8',
    body: 'gpuhooks_workload_leader 1\n'
  })
  const failing = await started({ current: ready }, async () => {
    throw new Error('collect failed')
  })
  t.same(await ask(failing, '/metrics'), { status: 500, type: 'application/json', body: '{"error":"metrics"}' })
})

t.test('another path is 404, another method 405', async (t) => {
  const port = await started({ current: ready })
  t.same(await ask(port, '/'), { status: 404, type: 'application/json', body: '{"error":"not found"}' })
  t.same(await ask(port, '/readyz', 'POST'), { status: 405, type: 'application/json', body: '{"error":"method not allowed"}' })
})

t.test('a client sending garbage loses its connection and the server keeps serving', async (t) => {
  const port = await started({ current: ready })
  await new Promise<void>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'))
    socket.on('close', () => resolve())
    socket.on('error', () => {})
    socket.resume()
  })
  t.equal((await ask(port, '/healthz')).status, 200)
})

t.test('listening on a port already taken rejects with the error', async (t) => {
  const port = await started({ current: ready })
  const second = probeServer({
    readiness: () => ready,
    metrics: { contentType: 'text/plain; version=0.0.4; charset=utf-8' as const, metrics: async () => '' }
  })
  await t.rejects(listen(second, port, log, '127.0.0.1'), { code: 'EADDRINUSE' })
})

t.test('close ends idle keep-alive connections rather than waiting for them', async (t) => {
  const server = probeServer({
    readiness: () => ready,
    metrics: { contentType: 'text/plain; version=0.0.4; charset=utf-8' as const, metrics: async () => '' }
  })
  const port = await listen(server, 0, log, '127.0.0.1')
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  await new Promise<void>((resolve) => {
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n')
    socket.once('data', () => resolve())
  })
  const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  await close(server)
  await ended
  t.pass('closed with a keep-alive connection open')
})
