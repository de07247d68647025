/**
 * A self-signed serving certificate for 127.0.0.1, valid for a day, made with openssl: what the
 * process tests give the admission listener.
 */
import { execFileSync } from 'node:child_process'

/** Writes a P-256 key to `keyFile` and its certificate (SAN IP:127.0.0.1) to `certFile`. */
export function selfSignedCert(certFile: string, keyFile: string): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1'
    ],
    { stdio: 'ignore' }
  )
}
