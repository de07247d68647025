// The certificates and keys of a throwaway test cluster, made with the
// openssl command-line tool: a CA, the API server's serving certificate, an
// admin client certificate and the service-account signing key.
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Paths of the files that {@link makeClusterCerts} writes. */
export interface ClusterCerts {
  caCert: string
  caKey: string
  serverCert: string
  serverKey: string
  adminCert: string
  adminKey: string
  serviceAccountKey: string
  serviceAccountPub: string
}

/** Valid for a week: long enough for any test run, short enough not to matter. */
const VALID_DAYS = '7'

/**
 * Writes a CA and the certificates a loopback cluster needs into `dir`. The
 * serving certificate names 127.0.0.1 and localhost (plus the in-cluster
 * names of the `kubernetes` Service and any `extraIPs`, such as a real node's
 * address the API server binds); the admin client certificate is in the
 * `system:masters` group, so it is allowed everything under RBAC too.
 */
export async function makeClusterCerts(dir: string, serviceIP: string, extraIPs: readonly string[] = []): Promise<ClusterCerts> {
  const certs: ClusterCerts = {
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    serverCert: join(dir, 'apiserver.crt'),
    serverKey: join(dir, 'apiserver.key'),
    adminCert: join(dir, 'admin.crt'),
    adminKey: join(dir, 'admin.key'),
    serviceAccountKey: join(dir, 'sa.key'),
    serviceAccountPub: join(dir, 'sa.pub')
  }

  await makeCa(certs.caCert, certs.caKey, 'gpuhooks-test-ca')

  const serverNames = [
    'IP:127.0.0.1',
    'DNS:localhost',
    `IP:${serviceIP}`,
    ...extraIPs.map((ip) => `IP:${ip}`),
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    'DNS:kubernetes.default.svc.cluster.local'
  ]
  await signedCert(dir, certs, certs.serverCert, certs.serverKey, '/CN=kube-apiserver', [
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    `subjectAltName=${serverNames.join(',')}`
  ])
  await signedCert(dir, certs, certs.adminCert, certs.adminKey, '/O=system:masters/CN=gpuhooks-admin', [
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=clientAuth'
  ])

  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', certs.serviceAccountKey])
  await openssl(['pkey', '-in', certs.serviceAccountKey, '-pubout', '-out', certs.serviceAccountPub])
  return certs
}

/** The arguments of `openssl req` for a new EC P-256 key, written unencrypted to `keyFile`. */
const newKey = (keyFile: string): string[] => ['-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-keyout', keyFile]

/** A self-signed CA: an EC P-256 key and a certificate that may sign others. */
async function makeCa(certFile: string, keyFile: string, commonName: string): Promise<void> {
  await openssl([
    'req',
    '-x509',
    '-days',
    VALID_DAYS,
    ...newKey(keyFile),
    '-out',
    certFile,
    '-subj',
    `/CN=${commonName}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign'
  ])
}

/** A new key and a certificate for it, signed by the CA, with the given v3 extensions. */
async function signedCert(
  dir: string,
  certs: ClusterCerts,
  certFile: string,
  keyFile: string,
  subject: string,
  extensions: string[]
): Promise<void> {
  const csr = `${certFile}.csr`
  const extFile = `${certFile}.ext`
  await writeFile(extFile, `${extensions.join('\n')}\n`)
  await openssl(['req', '-new', ...newKey(keyFile), '-out', csr, '-subj', subject])
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-days',
    VALID_DAYS,
    '-CA',
    certs.caCert,
    '-CAkey',
    certs.caKey,
    '-CAcreateserial',
    '-CAserial',
    join(dir, `${basename(certs.caCert)}.srl`),
    '-extfile',
    extFile,
    '-out',
    certFile
  ])
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args)
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? ''
    throw new Error(`openssl ${args[0]} failed: ${(error as Error).message}\n${stderr}`)
  }
}

/**
 * A client certificate for `subject` (`/O=<group>/CN=<user>`) and its key, signed by the cluster
 * CA in `dir`, written to `<name>.crt` and `<name>.key` there: how a test speaks as one kubelet
 * (`/O=system:nodes/CN=system:node:<node>`, what the Node authorizer and NodeRestriction key on).
 */
export async function makeClientCert(dir: string, name: string, subject: string): Promise<{ cert: string; key: string }> {
  const ca: ClusterCerts = {
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    serverCert: '',
    serverKey: '',
    adminCert: '',
    adminKey: '',
    serviceAccountKey: '',
    serviceAccountPub: ''
  }
  const files = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) }
  await signedCert(dir, ca, files.cert, files.key, subject, [
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=clientAuth'
  ])
  return files
}

/** The files of {@link makeWebhookCerts}. */
export interface WebhookCerts {
  caCert: string
  serverCert: string
  serverKey: string
}

/**
 * A CA of its own and a serving certificate for 127.0.0.1 signed by it: what the hook service's
 * HTTPS admission listener presents, and what the ValidatingWebhookConfiguration's caBundle trusts.
 */
export async function makeWebhookCerts(dir: string): Promise<WebhookCerts> {
  const ca: ClusterCerts = {
    caCert: join(dir, 'webhook-ca.crt'),
    caKey: join(dir, 'webhook-ca.key'),
    serverCert: join(dir, 'webhook.crt'),
    serverKey: join(dir, 'webhook.key'),
    adminCert: '',
    adminKey: '',
    serviceAccountKey: '',
    serviceAccountPub: ''
  }
  await makeCa(ca.caCert, ca.caKey, 'gpuhooks-webhook-test-ca')
  await signedCert(dir, ca, ca.serverCert, ca.serverKey, '/CN=gpuhooks-webhook', [
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    'subjectAltName=IP:127.0.0.1,DNS:localhost'
  ])
  return { caCert: ca.caCert, serverCert: ca.serverCert, serverKey: ca.serverKey }
}
