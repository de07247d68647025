/**
 * The shutdown sequence and the timeouts, on a real process: on SIGTERM `/readyz` answers 503
 * while the listeners still serve, then the listeners close, a request in flight is answered,
 * an idle keep-alive connection is ended cleanly (FIN, not reset), and the process exits 0; a
 * client that sends its headers too slowly is cut off.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { request as httpRequest } from 'node:http'
import { freePorts } from '../support/ports.ts'
import { startService } from '../support/service.ts'
import { childEnv } from '../support/child-env.ts'
import { openRaw } from './support/raw.ts'

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
      .on('error', reject)
      .end()
  })
}

t.test('SIGTERM: readiness off during the delay, then close; in-flight answered, idle connection ended cleanly, exit 0', async (t) => {
  const [port] = (await freePorts(1)) as [number]
  const service = await startService(
    { PORT: String(port), LOG_LEVEL: 'info', SHUTDOWN_DELAY_SECONDS: '2', SHUTDOWN_TIMEOUT_SECONDS: '20' },
    1
  )
  t.teardown(() => void service.child.kill('SIGKILL'))

  // An idle keep-alive connection: one request answered, then nothing.
  const idle = await openRaw(port)
  idle.socket.write('GET /healthz HTTP/1.1\r\nHost: gpuhooks\r\n\r\n')
  t.same(
    (await idle.responses(1)).map((r) => r.status),
    [200]
  )

  // A request in flight across the whole shutdown: headers and half the body now.
  const body = JSON.stringify({ controller: {}, parent: { metadata: { name: 'tenant' } } })
  const inflight = await openRaw(port)
  inflight.socket.write(
    `POST /hooks/isolation/customize HTTP/1.1\r\nHost: gpuhooks\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`
  )

  t.equal((await get(port, '/readyz')).status, 200, 'ready before the signal')
  service.child.kill('SIGTERM')
  await service.logged(/^draining/)
  t.same(await get(port, '/readyz'), { status: 503, body: '{"status":"draining"}' }, 'readyz answers 503 during the delay')
  t.equal((await get(port, '/healthz')).status, 200, 'the listener still serves during the delay')

  await service.logged(/listeners closing/)
  t.equal(await idle.ended, 'end', 'the idle keep-alive connection was ended with a FIN, not reset')
  inflight.socket.write(body.slice(10))
  const [answer] = await inflight.responses(1)
  t.equal(answer?.status, 200, 'the request in flight was answered after the listeners closed')
  t.match(answer?.body, /"relatedResources"/)
  t.equal(await service.exit, 0)
  const order = service
    .lines()
    .map((l) => String(l.msg))
    .filter((m) => /draining|listeners closing|stopped/.test(m))
  t.same(
    order.map((m) => m.split(':')[0]),
    ['draining', 'listeners closing', 'stopped']
  )
})

t.test('slow clients are cut off: headers after HEADERS_TIMEOUT_SECONDS, the whole request after REQUEST_TIMEOUT_SECONDS', async (t) => {
  const [port] = (await freePorts(1)) as [number]
  const service = await startService(
    { PORT: String(port), LOG_LEVEL: 'info', HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '2', SHUTDOWN_DELAY_SECONDS: '0' },
    1
  )
  t.teardown(() => void service.child.kill('SIGKILL'))
  const slowHeaders = await openRaw(port)
  slowHeaders.socket.write('POST /hooks/isolation/customize HTTP/1.1\r\nHost: gpuhooks\r\n')
  const slowBody = await openRaw(port)
  slowBody.socket.write(
    'POST /hooks/isolation/customize HTTP/1.1\r\nHost: gpuhooks\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"contr'
  )
  for (const [name, raw] of [
    ['headers', slowHeaders],
    ['body', slowBody]
  ] as const) {
    t.ok(['end', 'error'].includes(await raw.ended), `slow ${name}: the server closed the connection`)
    t.match(raw.text(), /^HTTP\/1\.1 408/, `slow ${name}: with 408 Request Timeout`)
  }
  service.child.kill('SIGTERM')
  t.equal(await service.exit, 0)
})

t.test('a second signal skips the rest of the delay', async (t) => {
  const [port] = (await freePorts(1)) as [number]
  const service = await startService(
    { PORT: String(port), LOG_LEVEL: 'info', SHUTDOWN_DELAY_SECONDS: '600', SHUTDOWN_TIMEOUT_SECONDS: '900' },
    1
  )
  t.teardown(() => void service.child.kill('SIGKILL'))
  service.child.kill('SIGTERM')
  await service.logged(/^draining/)
  service.child.kill('SIGINT')
  t.equal(await service.exit, 0)
  t.ok(service.lines().some((l) => /second signal/.test(String(l.msg))))
})

t.test('npm start passes SIGTERM on to the service, which drains and stops', async (t) => {
  const [port] = (await freePorts(1)) as [number]
  const npm = spawn('npm', ['start'], {
    env: childEnv({
      PORT: String(port),
      LOG_LEVEL: 'info',
      SHUTDOWN_DELAY_SECONDS: '0',
      MAX_EVENT_LOOP_DELAY_MS: '0',
      MAX_HEAP_USED_BYTES: '0'
    }),
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => void npm.kill('SIGKILL'))
  let out = ''
  npm.stdout.on('data', (c: Buffer) => (out += c.toString()))
  const exit = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)))
  while (!/hooks listening/.test(out)) await new Promise<void>((resolve) => npm.stdout.once('data', () => resolve()))
  const servicePid = Number(/"pid":(\d+)/.exec(out)?.[1])
  npm.kill('SIGTERM')
  t.equal(await exit, 0, 'npm exits 0')
  const lines = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; pid: number })
  t.same(
    lines.filter((l) => /^draining|^stopped/.test(l.msg)).map((l) => [l.pid, l.msg.split(':')[0]]),
    [
      [servicePid, 'draining'],
      [servicePid, 'stopped']
    ],
    'the service itself got the signal and stopped'
  )
  t.throws(() => process.kill(servicePid, 0), 'no service process is left behind')
})
