/**
 * The certificate entry point's environment (main.ts lists the variables), parsed once, every
 * problem named.
 */
import { serviceNames, type CertPolicy } from './issue.ts'

/** The parsed environment. */
export interface CertsConfig {
  namespace: string
  secretName: string
  serviceName: string
  webhookConfigurations: string[]
  deploymentName: string | undefined
  names: string[]
  policy: CertPolicy
}

const DNS_OR_IP = /^[A-Za-z0-9]([A-Za-z0-9.:-]*[A-Za-z0-9])?$/

/** Reads the environment; throws naming every variable that is missing or wrong. */
export function readCertsConfig(env: NodeJS.ProcessEnv): CertsConfig {
  const problems: string[] = []
  const required = (name: string): string => {
    const value = env[name] ?? ''
    if (value === '') problems.push(`${name} is required`)
    return value
  }
  const days = (name: string, fallback: number): number => {
    const raw = env[name]
    if (raw === undefined || raw === '') return fallback
    const value = Number(raw)
    if (!Number.isInteger(value) || value < 1 || value > 36500)
      problems.push(`${name}=${raw} must be a whole number of days from 1 to 36500`)
    return value
  }
  const list = (name: string): string[] =>
    (env[name] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
  const namespace = required('NAMESPACE')
  const secretName = required('SECRET_NAME')
  const serviceName = required('SERVICE_NAME')
  const extra = list('EXTRA_SANS')
  for (const name of extra)
    if (!DNS_OR_IP.test(name)) problems.push(`EXTRA_SANS entry ${JSON.stringify(name)} is not a DNS name or IP address`)
  const policy = {
    caValidityDays: days('CA_VALIDITY_DAYS', 3650),
    certValidityDays: days('CERT_VALIDITY_DAYS', 730),
    renewBeforeDays: days('RENEW_BEFORE_DAYS', 90)
  }
  if (policy.renewBeforeDays >= policy.certValidityDays) problems.push('RENEW_BEFORE_DAYS must be less than CERT_VALIDITY_DAYS')
  if (problems.length > 0) throw new Error(`invalid environment: ${problems.join('; ')}`)
  const deployment = env['DEPLOYMENT_NAME'] ?? ''
  return {
    namespace,
    secretName,
    serviceName,
    webhookConfigurations: list('WEBHOOK_CONFIGURATIONS'),
    deploymentName: deployment === '' ? undefined : deployment,
    names: [...serviceNames(serviceName, namespace), ...extra],
    policy
  }
}
