/**
 * The admission webhook's certificate: a CA of the installation's own and a serving certificate
 * for the hook Service, kept while valid and renewed before expiry. The decision (`plan`) is a
 * pure function of what is stored and `now`; issuing uses node-forge for the X.509 encoding and
 * Node's crypto for keys and checks.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto'
import { isIP } from 'node:net'
import forge from 'node-forge'

/** The PEM texts the TLS Secret holds (`tls.crt`, `tls.key`, `ca.crt`, `ca.key`). */
export interface CertBundle {
  cert: string
  key: string
  caCert: string
  caKey: string
}

/** How long things are valid and when they are renewed. */
export interface CertPolicy {
  caValidityDays: number
  certValidityDays: number
  renewBeforeDays: number
}

/** What to do with the stored certificate. */
export type Plan = { action: 'keep' } | { action: 'issue-cert'; reason: string } | { action: 'issue-ca-and-cert'; reason: string }

const DAY_MS = 24 * 60 * 60 * 1000

/** The names a serving certificate of Service `service` in `namespace` must carry. */
export function serviceNames(service: string, namespace: string): string[] {
  return [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`]
}

function parse(pem: string): X509Certificate | undefined {
  try {
    return new X509Certificate(pem)
  } catch {
    return undefined
  }
}

function covers(cert: X509Certificate, name: string): boolean {
  return isIP(name) === 0 ? cert.checkHost(name, { subject: 'never', wildcards: false }) === name : cert.checkIP(name) === name
}

function keyMatches(cert: X509Certificate, keyPem: string): boolean {
  try {
    return cert.checkPrivateKey(createPrivateKey(keyPem))
  } catch {
    return false
  }
}

/**
 * Decides from the stored bundle (undefined: no Secret, or fields missing) whether it serves
 * `names` until `renewBeforeDays` from `now`. A CA that is unreadable, does not match its key or
 * nears its end is replaced with the certificate; a certificate that is unreadable, not signed by
 * the CA, not matching its key, missing a name or nearing its end is issued anew from the CA.
 */
export function plan(stored: Partial<CertBundle> | undefined, names: readonly string[], now: Date, policy: CertPolicy): Plan {
  const horizon = now.getTime() + policy.renewBeforeDays * DAY_MS
  const ca = typeof stored?.caCert === 'string' ? parse(stored.caCert) : undefined
  if (ca === undefined || typeof stored?.caKey !== 'string') return { action: 'issue-ca-and-cert', reason: 'no readable CA' }
  if (!ca.ca || !keyMatches(ca, stored.caKey)) return { action: 'issue-ca-and-cert', reason: 'the CA key does not match the CA' }
  if (Date.parse(ca.validTo) <= horizon) return { action: 'issue-ca-and-cert', reason: `the CA expires ${ca.validTo}` }
  const cert = typeof stored.cert === 'string' ? parse(stored.cert) : undefined
  if (cert === undefined || typeof stored.key !== 'string') return { action: 'issue-cert', reason: 'no readable certificate' }
  if (!cert.verify(ca.publicKey)) return { action: 'issue-cert', reason: 'the certificate is not signed by the CA' }
  if (!keyMatches(cert, stored.key)) return { action: 'issue-cert', reason: 'the key does not match the certificate' }
  const missing = names.filter((name) => !covers(cert, name))
  if (missing.length > 0) return { action: 'issue-cert', reason: `the certificate lacks ${missing.join(', ')}` }
  if (Date.parse(cert.validTo) <= horizon) return { action: 'issue-cert', reason: `the certificate expires ${cert.validTo}` }
  if (Date.parse(cert.validFrom) > now.getTime())
    return { action: 'issue-cert', reason: `the certificate is valid only from ${cert.validFrom}` }
  return { action: 'keep' }
}

function newKey(): { pem: string; forgeKey: forge.pki.rsa.PrivateKey; forgePublic: forge.pki.rsa.PublicKey } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()
  const forgeKey = forge.pki.privateKeyFromPem(pem)
  const forgePublic = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString())
  return { pem, forgeKey, forgePublic }
}

function serial(): string {
  // Positive: the high bit of the first byte cleared.
  const bytes = randomBytes(16)
  bytes[0] = (bytes[0] ?? 0) & 0x7f
  return bytes.toString('hex')
}

function validity(cert: forge.pki.Certificate, now: Date, days: number): void {
  // Back-dated an hour: a node whose clock runs a little behind still accepts it.
  cert.validity.notBefore = new Date(now.getTime() - 60 * 60 * 1000)
  cert.validity.notAfter = new Date(now.getTime() + days * DAY_MS)
}

/** A new self-signed CA. */
export function issueCa(now: Date, days: number, commonName = 'gpuhooks-webhook-ca'): { caCert: string; caKey: string } {
  const key = newKey()
  const cert = forge.pki.createCertificate()
  cert.publicKey = key.forgePublic
  cert.serialNumber = serial()
  validity(cert, now, days)
  const subject = [{ name: 'commonName', value: commonName }]
  cert.setSubject(subject)
  cert.setIssuer(subject)
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' }
  ])
  cert.sign(key.forgeKey, forge.md.sha256.create())
  return { caCert: forge.pki.certificateToPem(cert), caKey: key.pem }
}

/** A serving certificate for `names` (DNS names or IP addresses), signed by the CA. */
export function issueCert(
  ca: { caCert: string; caKey: string },
  names: readonly string[],
  now: Date,
  days: number
): { cert: string; key: string } {
  const caCert = forge.pki.certificateFromPem(ca.caCert)
  const caKey = forge.pki.privateKeyFromPem(ca.caKey)
  const key = newKey()
  const cert = forge.pki.createCertificate()
  cert.publicKey = key.forgePublic
  cert.serialNumber = serial()
  validity(cert, now, days)
  cert.setSubject([{ name: 'commonName', value: names[0] ?? 'gpuhooks' }])
  cert.setIssuer(caCert.subject.attributes)
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: names.map((name) => (isIP(name) === 0 ? { type: 2, value: name } : { type: 7, ip: name })) }
  ])
  cert.sign(caKey, forge.md.sha256.create())
  return { cert: forge.pki.certificateToPem(cert), key: key.pem }
}

/**
 * Carries out a plan: the bundle to store, and the caBundle the webhooks must trust. While a
 * replaced CA is still valid, the caBundle holds both, so a Pod still serving the old certificate
 * keeps working until it restarts.
 */
export function carryOut(
  stored: Partial<CertBundle> | undefined,
  decided: Plan,
  names: readonly string[],
  now: Date,
  policy: CertPolicy
): { bundle: CertBundle; caBundle: string } {
  if (decided.action === 'keep' && stored !== undefined) {
    const bundle = stored as CertBundle
    return { bundle, caBundle: bundle.caCert }
  }
  const keepCa = decided.action === 'issue-cert' && typeof stored?.caCert === 'string' && typeof stored.caKey === 'string'
  const ca = keepCa ? { caCert: stored.caCert as string, caKey: stored.caKey as string } : issueCa(now, policy.caValidityDays)
  const serving = issueCert(ca, names, now, Math.min(policy.certValidityDays, policy.caValidityDays))
  let caBundle = ca.caCert
  const old = typeof stored?.caCert === 'string' && !keepCa ? parse(stored.caCert) : undefined
  if (old !== undefined && old.ca && Date.parse(old.validTo) > now.getTime()) caBundle += stored?.caCert ?? ''
  return { bundle: { ...serving, ...ca }, caBundle }
}
