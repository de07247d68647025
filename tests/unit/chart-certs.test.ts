/**
 * The webhook certificate the chart's Job keeps: what `plan` decides for every stored state, that
 * what `carryOut` issues is a CA and a serving certificate a TLS client accepts for the Service's
 * names, and the environment of the entry point.
 */
import t from 'tap'
import { X509Certificate } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:https'
import { connect } from 'node:tls'
import { carryOut, issueCa, issueCert, plan, serviceNames, type CertBundle, type CertPolicy } from '../../hooks/certs/issue.ts'
import { readCertsConfig } from '../../hooks/certs/config.ts'

const NOW = new Date('2026-06-01T00:00:00Z')
const DAY = 24 * 60 * 60 * 1000
const POLICY: CertPolicy = { caValidityDays: 3650, certValidityDays: 730, renewBeforeDays: 90 }
const NAMES = serviceNames('gpuhooks', 'gpuhooks-system')

t.test('the Service names are the in-cluster DNS names the API server verifies', async (t) => {
  t.same(NAMES, ['gpuhooks.gpuhooks-system.svc', 'gpuhooks.gpuhooks-system.svc.cluster.local'])
})

const fresh = carryOut(undefined, plan(undefined, NAMES, NOW, POLICY), NAMES, NOW, POLICY)

t.test('nothing stored: a CA and a certificate are issued, and the caBundle is the CA', async (t) => {
  t.same(plan(undefined, NAMES, NOW, POLICY), { action: 'issue-ca-and-cert', reason: 'no readable CA' })
  const ca = new X509Certificate(fresh.bundle.caCert)
  const cert = new X509Certificate(fresh.bundle.cert)
  t.equal(ca.ca, true)
  t.equal(cert.ca, false)
  t.ok(cert.verify(ca.publicKey), 'signed by the CA')
  t.equal(cert.subjectAltName, 'DNS:gpuhooks.gpuhooks-system.svc, DNS:gpuhooks.gpuhooks-system.svc.cluster.local')
  t.equal(Date.parse(cert.validTo), Date.parse(new Date(NOW.getTime() + 730 * DAY).toUTCString()))
  t.equal(Date.parse(ca.validTo), Date.parse(new Date(NOW.getTime() + 3650 * DAY).toUTCString()))
  t.equal(fresh.caBundle, fresh.bundle.caCert)
})

t.test('what was issued is kept while valid', async (t) => {
  t.same(plan(fresh.bundle, NAMES, NOW, POLICY), { action: 'keep' })
  t.same(plan(fresh.bundle, NAMES, new Date(NOW.getTime() + 600 * DAY), POLICY), { action: 'keep' })
  const kept = carryOut(fresh.bundle, { action: 'keep' }, NAMES, NOW, POLICY)
  t.same(kept.bundle, fresh.bundle)
})

t.test('every defect is renewed, from the kept CA where the CA is sound', async (t) => {
  const otherCa = issueCa(NOW, 3650)
  const foreign = issueCert(otherCa, NAMES, NOW, 730)
  const rows: { name: string; stored: Partial<CertBundle>; at?: Date; names?: string[]; expected: string }[] = [
    { name: 'the certificate nears its end', stored: fresh.bundle, at: new Date(NOW.getTime() + 650 * DAY), expected: 'issue-cert' },
    { name: 'a name is missing', stored: fresh.bundle, names: [...NAMES, 'gpuhooks.other.svc'], expected: 'issue-cert' },
    {
      name: 'the certificate is signed by another CA',
      stored: { ...fresh.bundle, cert: foreign.cert, key: foreign.key },
      expected: 'issue-cert'
    },
    { name: "the key is another certificate's", stored: { ...fresh.bundle, key: foreign.key }, expected: 'issue-cert' },
    { name: 'the certificate is garbage', stored: { ...fresh.bundle, cert: 'not a certificate' }, expected: 'issue-cert' },
    { name: "the CA key is another CA's", stored: { ...fresh.bundle, caKey: otherCa.caKey }, expected: 'issue-ca-and-cert' },
    { name: 'the CA nears its end', stored: fresh.bundle, at: new Date(NOW.getTime() + 3600 * DAY), expected: 'issue-ca-and-cert' },
    { name: 'the CA is missing', stored: { cert: fresh.bundle.cert, key: fresh.bundle.key }, expected: 'issue-ca-and-cert' }
  ]
  for (const row of rows) {
    t.test(row.name, async (t) => {
      const at = row.at ?? NOW
      const names = row.names ?? NAMES
      const decided = plan(row.stored, names, at, POLICY)
      t.equal(decided.action, row.expected)
      const renewed = carryOut(row.stored, decided, names, at, POLICY)
      t.same(plan(renewed.bundle, names, at, POLICY), { action: 'keep' }, 'the renewed bundle is kept by the next run')
      if (row.expected === 'issue-cert') t.equal(renewed.bundle.caCert, row.stored.caCert, 'the CA is kept')
      else t.not(renewed.bundle.caCert, row.stored.caCert, 'a new CA')
    })
  }
})

t.test('a replaced CA that is still valid stays in the caBundle beside the new one', async (t) => {
  const at = new Date(NOW.getTime() + 3600 * DAY)
  const renewed = carryOut(fresh.bundle, plan(fresh.bundle, NAMES, at, POLICY), NAMES, at, POLICY)
  t.equal(renewed.caBundle, renewed.bundle.caCert + fresh.bundle.caCert)
})

t.test('a TLS client trusting the CA accepts the certificate for the Service name, and refuses another name', async (t) => {
  const server = createServer({ cert: fresh.bundle.cert, key: fresh.bundle.key }, (_req, res) => res.end('ok'))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const port = (server.address() as { port: number }).port
  const handshake = (servername: string): Promise<string> =>
    new Promise((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, servername, ca: fresh.caBundle }, () => {
        socket.end()
        resolve('ok')
      })
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
    })
  t.equal(await handshake('gpuhooks.gpuhooks-system.svc'), 'ok')
  t.equal(await handshake('gpuhooks.elsewhere.svc'), 'ERR_TLS_CERT_ALTNAME_INVALID')
})

t.test('IP addresses in EXTRA_SANS become IP entries', async (t) => {
  const cert = new X509Certificate(issueCert(fresh.bundle, [...NAMES, '127.0.0.1'], NOW, 30).cert)
  t.equal(cert.checkIP('127.0.0.1'), '127.0.0.1')
})

t.test("the entry point's environment", async (t) => {
  const base = { NAMESPACE: 'gpuhooks-system', SECRET_NAME: 'gpuhooks-webhook-tls', SERVICE_NAME: 'gpuhooks' }
  t.same(readCertsConfig({ ...base, WEBHOOK_CONFIGURATIONS: 'a, b', EXTRA_SANS: '127.0.0.1' }), {
    namespace: 'gpuhooks-system',
    secretName: 'gpuhooks-webhook-tls',
    serviceName: 'gpuhooks',
    webhookConfigurations: ['a', 'b'],
    webhookWaitSeconds: 120,
    deploymentName: undefined,
    names: [...NAMES, '127.0.0.1'],
    policy: POLICY
  })
  t.throws(() => readCertsConfig({}), /NAMESPACE is required; SECRET_NAME is required; SERVICE_NAME is required/)
  t.throws(() => readCertsConfig({ ...base, CERT_VALIDITY_DAYS: 'soon' }), /CERT_VALIDITY_DAYS=soon must be a whole number of days/)
  t.throws(() => readCertsConfig({ ...base, RENEW_BEFORE_DAYS: '800' }), /RENEW_BEFORE_DAYS must be less than CERT_VALIDITY_DAYS/)
  t.equal(readCertsConfig({ ...base, WEBHOOK_WAIT_SECONDS: '0' }).webhookWaitSeconds, 0)
  t.throws(
    () => readCertsConfig({ ...base, WEBHOOK_WAIT_SECONDS: '-1' }),
    /WEBHOOK_WAIT_SECONDS=-1 must be a whole number of seconds from 0 to 3600/
  )
  t.throws(() => readCertsConfig({ ...base, EXTRA_SANS: 'a b' }), /EXTRA_SANS entry "a b" is not a DNS name or IP address/)
})
