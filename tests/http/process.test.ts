/**
 * The process contract, on a real process started as `npm start` starts it: environment,
 * listeners, probes, the HTTPS admission listener, and a graceful SIGTERM that finishes what is in
 * flight and exits 0.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readConfig } from '../../hooks/server/config.ts'
import { childEnv } from '../support/child-env.ts'
import { freePorts } from '../support/ports.ts'
import { WEBHOOKS } from '../cluster/support/env.ts'
import { selfSignedCert } from './support/certs.ts'
import { startService } from '../support/service.ts'

t.test('readConfig', async (t) => {
  const rows: { name: string; given: NodeJS.ProcessEnv; expected: unknown }[] = [
    {
      name: 'defaults follow the process contract',
      given: {},
      expected: {
        port: 8080,
        webhookPort: 9443,
        tls: undefined,
        logLevel: 'info',
        bodyLimit: 16 * 1024 * 1024,
        shutdownDelayMs: 5000,
        shutdownTimeoutMs: 25000,
        limits: {
          maxJsonDepth: 100,
          maxEventLoopDelayMs: 1000,
          maxHeapUsedBytes: 1024 * 1024 * 1024,
          maxInflightBytes: 64 * 1024 * 1024,
          retryAfterSeconds: 5,
          requestTimeoutMs: 30000,
          headersTimeoutMs: 10000,
          bodyStallTimeoutMs: 10000,
          keepAliveTimeoutMs: 95000
        },
        context: { permittedNodeKeys: [] }
      }
    },
    {
      name: 'every variable is read',
      given: {
        PORT: '1',
        WEBHOOK_PORT: '2',
        TLS_CERT_FILE: '/c',
        TLS_KEY_FILE: '/k',
        LOG_LEVEL: 'debug',
        BODY_LIMIT: '2048',
        SHUTDOWN_DELAY_SECONDS: '2',
        SHUTDOWN_TIMEOUT_SECONDS: '5',
        JSON_MAX_DEPTH: '64',
        MAX_EVENT_LOOP_DELAY_MS: '0',
        MAX_HEAP_USED_BYTES: '1000',
        MAX_INFLIGHT_BYTES: '4096',
        RETRY_AFTER_SECONDS: '9',
        REQUEST_TIMEOUT_SECONDS: '7',
        HEADERS_TIMEOUT_SECONDS: '3',
        BODY_STALL_TIMEOUT_SECONDS: '4',
        KEEP_ALIVE_TIMEOUT_SECONDS: '11',
        PERMITTED_NODE_KEYS: 'node-role.kubernetes.io/master,node-restriction.kubernetes.io/'
      },
      expected: {
        port: 1,
        webhookPort: 2,
        tls: { certFile: '/c', keyFile: '/k' },
        logLevel: 'debug',
        bodyLimit: 2048,
        shutdownDelayMs: 2000,
        shutdownTimeoutMs: 5000,
        limits: {
          maxJsonDepth: 64,
          maxEventLoopDelayMs: 0,
          maxHeapUsedBytes: 1000,
          maxInflightBytes: 4096,
          retryAfterSeconds: 9,
          requestTimeoutMs: 7000,
          headersTimeoutMs: 3000,
          bodyStallTimeoutMs: 4000,
          keepAliveTimeoutMs: 11000
        },
        context: { permittedNodeKeys: ['node-restriction.kubernetes.io/', 'node-role.kubernetes.io/master'] }
      }
    },
    {
      name: 'a request timeout below the body stall default takes the stall timeout down with it',
      given: { REQUEST_TIMEOUT_SECONDS: '4', HEADERS_TIMEOUT_SECONDS: '2' },
      expected: {
        ...readConfig({}),
        limits: { ...readConfig({}).limits, requestTimeoutMs: 4000, headersTimeoutMs: 2000, bodyStallTimeoutMs: 4000 }
      }
    },
    {
      name: 'a body limit above the in-flight default raises the in-flight default with it',
      given: { BODY_LIMIT: String(100 * 1024 * 1024) },
      expected: {
        ...readConfig({}),
        bodyLimit: 100 * 1024 * 1024,
        limits: { ...readConfig({}).limits, maxInflightBytes: 100 * 1024 * 1024 }
      }
    }
  ]
  for (const row of rows) t.test(row.name, async (t) => t.same(readConfig(row.given), row.expected))
  const bad: { name: string; given: NodeJS.ProcessEnv; message: RegExp }[] = [
    { name: 'a port that is not a number is named', given: { PORT: 'http' }, message: /PORT=http must be an integer from 0 to 65535/ },
    { name: 'a port out of range is named', given: { WEBHOOK_PORT: '70000' }, message: /WEBHOOK_PORT=70000/ },
    { name: 'half a TLS pair is refused', given: { TLS_CERT_FILE: '/c' }, message: /TLS_CERT_FILE and TLS_KEY_FILE must be set together/ },
    { name: 'an unknown log level is refused', given: { LOG_LEVEL: 'loud' }, message: /LOG_LEVEL=loud must be one of/ },
    {
      name: 'a permitted Node key that is neither a key nor a prefix is named',
      given: { PERMITTED_NODE_KEYS: 'ok,not a key' },
      message: /PERMITTED_NODE_KEYS entry "not a key" is neither a label key/
    },
    { name: 'all problems are reported together', given: { PORT: 'x', LOG_LEVEL: 'loud' }, message: /PORT=x.*; LOG_LEVEL=loud/ },
    {
      name: 'a shutdown delay as long as the timeout is refused',
      given: { SHUTDOWN_DELAY_SECONDS: '25' },
      message: /SHUTDOWN_DELAY_SECONDS=25 must be below SHUTDOWN_TIMEOUT_SECONDS=25/
    },
    {
      name: 'a headers timeout above the request timeout is refused',
      given: { HEADERS_TIMEOUT_SECONDS: '40' },
      message: /HEADERS_TIMEOUT_SECONDS=40 must not exceed REQUEST_TIMEOUT_SECONDS=30/
    },
    {
      name: 'a body stall timeout above the request timeout is refused',
      given: { BODY_STALL_TIMEOUT_SECONDS: '31' },
      message: /BODY_STALL_TIMEOUT_SECONDS=31 must not exceed REQUEST_TIMEOUT_SECONDS=30/
    },
    {
      name: 'a body stall timeout of 0 is refused',
      given: { BODY_STALL_TIMEOUT_SECONDS: '0' },
      message: /BODY_STALL_TIMEOUT_SECONDS=0 must be an integer from 1 to 3600/
    },
    {
      name: 'every timeout problem is reported together',
      given: { HEADERS_TIMEOUT_SECONDS: '40', BODY_STALL_TIMEOUT_SECONDS: '40', PORT: 'x' },
      message:
        /PORT=x must be .*; HEADERS_TIMEOUT_SECONDS=40 must not exceed REQUEST_TIMEOUT_SECONDS=30; BODY_STALL_TIMEOUT_SECONDS=40 must not exceed REQUEST_TIMEOUT_SECONDS=30/
    },
    {
      name: 'a JSON depth below 32 is refused',
      given: { JSON_MAX_DEPTH: '8' },
      message: /JSON_MAX_DEPTH=8 must be an integer from 32 to 1000/
    }
  ]
  for (const row of bad) t.test(row.name, async (t) => t.throws(() => readConfig(row.given), row.message))
})

async function freePort(): Promise<number> {
  return (await freePorts(1))[0] as number
}

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c.toString()))
      res.on('error', reject)
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
      .on('error', reject)
      .end()
  })
}

t.test('a bad variable stops the start: exit 1, and one fatal line names the variable and its rule', async (t) => {
  const env = childEnv({ PORT: String(await freePort()), BODY_STALL_TIMEOUT_SECONDS: '31' })
  const child = spawn(process.execPath, ['--import', 'tsx', 'hooks/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  // 'close', not 'exit': only then has all of stderr been read.
  const [code] = (await once(child, 'close')) as [number | null]
  t.equal(code, 1)
  const fatal = stderr.split('\n').filter((line) => line.includes('"fatal"'))
  t.equal(fatal.length, 1, stderr)
  t.match(JSON.parse(fatal[0] ?? '{}'), {
    level: 'fatal',
    msg: /BODY_STALL_TIMEOUT_SECONDS=31 must not exceed REQUEST_TIMEOUT_SECONDS=30, or it could never fire/
  })
})

t.test('without TLS the hooks serve HTTP, the admission listener is off and the log says so once', async (t) => {
  const port = await freePort()
  const service = await startService({ PORT: String(port), LOG_LEVEL: 'info', SHUTDOWN_DELAY_SECONDS: '0' }, 1)
  t.teardown(() => void service.child.kill('SIGKILL'))
  const health = await get(port, '/healthz')
  t.equal(health.status, 200)
  t.same(JSON.parse(health.body), { status: 'ok' })
  t.equal((await get(port, '/readyz')).status, 200)
  t.match((await get(port, '/metrics')).body, /gpuhooks_process_cpu_seconds_total/)
  t.equal(service.lines().filter((l) => /admission listener off/.test(String(l.msg))).length, 1)
  t.ok(
    service.lines().every((l) => typeof l.level === 'number' && typeof l.time === 'number'),
    'logs are pino JSON lines'
  )
  service.child.kill('SIGTERM')
  t.equal(await service.exit, 0)
})

t.test('SIGTERM finishes a request in flight, then exits 0', async (t) => {
  const port = await freePort()
  const service = await startService({ PORT: String(port), LOG_LEVEL: 'info', SHUTDOWN_DELAY_SECONDS: '0' }, 1)
  t.teardown(() => void service.child.kill('SIGKILL'))
  const body = JSON.stringify({ controller: {}, parent: { metadata: { name: 'n' } } })
  const answer = new Promise<number>((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/hooks/isolation/customize',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
      },
      (res) => {
        res.resume()
        res.on('error', reject)
        res.on('end', () => resolve(res.statusCode ?? 0))
      }
    )
    req.on('error', reject)
    // Half the body now, SIGTERM, then the rest: the request is in flight when the signal lands.
    req.write(body.slice(0, 10))
    setTimeout(() => {
      service.child.kill('SIGTERM')
      setTimeout(() => req.end(body.slice(10)), 300)
    }, 200)
  })
  t.equal(await answer, 200)
  t.equal(await service.exit, 0)
  t.ok(service.lines().some((l) => /draining/.test(String(l.msg))))
})

t.test('with TLS the admission listener serves HTTPS on WEBHOOK_PORT', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-tls-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const cert = join(dir, 'tls.crt')
  const key = join(dir, 'tls.key')
  selfSignedCert(cert, key)
  const [port, webhookPort] = (await freePorts(2)) as [number, number]
  const service = await startService(
    { PORT: String(port), WEBHOOK_PORT: String(webhookPort), TLS_CERT_FILE: cert, TLS_KEY_FILE: key, SHUTDOWN_DELAY_SECONDS: '0' },
    2
  )
  t.teardown(() => void service.child.kill('SIGKILL'))
  const ca = readFileSync(cert)
  const post = (path: string, payload: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port: webhookPort, path, method: 'POST', ca, headers: { 'content-type': 'application/json' } },
        (res) => {
          let text = ''
          res.on('data', (c: Buffer) => (text += c.toString()))
          res.on('error', reject)
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
        }
      )
      req.on('error', reject)
      req.end(payload)
    })
  // The Instance webhook's row of the cluster layer: its path, and the probe object it admits.
  const webhook = WEBHOOKS.find((w) => w.hook === 'admission_instance')
  if (webhook === undefined) throw new Error('no Instance webhook in WEBHOOKS')
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'abc-123',
      kind: { group: webhook.apiGroup, version: webhook.apiVersion, kind: 'Instance' },
      operation: 'CREATE',
      object: webhook.probe
    }
  }
  const answer = await post(webhook.path, JSON.stringify(review))
  t.equal(answer.status, 200)
  t.same(JSON.parse(answer.body).response, { uid: 'abc-123', allowed: true })
  t.equal((await post('/admission/instance', '{"kind": 1}')).status, 400)
  t.equal((await get(port, '/healthz')).status, 200, 'hooks still on plain HTTP')
  // Plain HTTP on the HTTPS port fails the handshake: logged, and the service keeps serving.
  await new Promise<void>((resolve) => {
    const socket = connect(webhookPort, '127.0.0.1', () => socket.end('GET / HTTP/1.1\r\nHost: x\r\n\r\n'))
    socket.on('error', () => resolve())
    socket.on('close', () => resolve())
    socket.resume()
  })
  const logged = async (): Promise<boolean> => {
    for (let i = 0; i < 100; i++) {
      if (service.lines().some((l) => l.msg === 'TLS handshake failed')) return true
      await new Promise((r) => setTimeout(r, 100))
    }
    return false
  }
  t.ok(await logged(), 'a failed TLS handshake is logged')
  t.equal((await post('/admission/instance', JSON.stringify(review))).status, 200, 'admission still serves')
  service.child.kill('SIGTERM')
  t.equal(await service.exit, 0)
})
