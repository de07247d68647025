/**
 * A SIGTERM that arrives while the service is still starting (the hooks listener up, the
 * admission listener not yet) drains and exits 0 like any other: the signal handlers are
 * installed before the first listener answers, and the drain closes every listener once start-up
 * is over. Without that, node's default action ended the process at once (an exit by signal, no
 * "draining" line), which a Pod deleted while it starts can hit.
 *
 * The window is made wide and certain: the certificate file is a FIFO, so the service blocks in
 * reading it, after the hooks listener said it listens, until the test writes the certificate,
 * which it does only after the signal was sent.
 */
import t from 'tap'
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePorts } from '../support/ports.ts'
import { selfSignedCert } from './support/certs.ts'
import { startService } from '../support/service.ts'

t.test('a SIGTERM during start-up drains and exits 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-early-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const madeCert = join(dir, 'made.crt')
  const key = join(dir, 'tls.key')
  selfSignedCert(madeCert, key)
  const fifo = join(dir, 'tls.crt')
  execFileSync('mkfifo', [fifo])
  const [port, webhookPort] = (await freePorts(2)) as [number, number]
  const service = await startService(
    {
      PORT: String(port),
      WEBHOOK_PORT: String(webhookPort),
      TLS_CERT_FILE: fifo,
      TLS_KEY_FILE: key,
      SHUTDOWN_DELAY_SECONDS: '0',
      NODE_OPTIONS: ''
    },
    1
  )
  t.teardown(() => void service.child.kill('SIGKILL'))
  service.child.kill('SIGTERM')
  // Only now is the certificate written: a writer that blocks until the service opens the FIFO,
  // and is killed if the service is gone without ever reading it.
  const writer = spawn('sh', ['-c', 'cat "$1" > "$2"', 'sh', madeCert, fifo], { stdio: 'ignore' })
  t.teardown(() => void writer.kill('SIGKILL'))
  t.equal(await service.exit, 0, 'exit code 0, not an exit by signal')
  const messages = service.lines().map((line) => String(line.msg))
  t.ok(
    messages.some((m) => m.startsWith('draining')),
    'the drain was logged'
  )
  t.ok(messages.includes('stopped'), 'the listeners were closed')
})
