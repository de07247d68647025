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
  /** How long a run waits for a listed configuration to exist, in seconds. */
  webhookWaitSeconds: number
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
  const whole = (name: string, fallback: number, min: number, max: number, unit: string): number => {
    const raw = env[name]
    if (raw === undefined || raw === '') return fallback
    const value = Number(raw)
    if (!Number.isInteger(value) || value < min || value > max)
      problems.push(`${name}=${raw} must be a whole number of ${unit} from ${min} to ${max}`)
    return value
  }
  const days = (name: string, fallback: number): number => whole(name, fallback, 1, 36500, 'days')
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
  const webhookWaitSeconds = whole('WEBHOOK_WAIT_SECONDS', 120, 0, 3600, 'seconds')
  if (policy.renewBeforeDays >= policy.certValidityDays) problems.push('RENEW_BEFORE_DAYS must be less than CERT_VALIDITY_DAYS')
  if (problems.length > 0) throw new Error(`invalid environment: ${problems.join('; ')}`)
  const deployment = env['DEPLOYMENT_NAME'] ?? ''
  return {
    namespace,
    secretName,
    serviceName,
    webhookConfigurations: list('WEBHOOK_CONFIGURATIONS'),
    webhookWaitSeconds,
    deploymentName: deployment === '' ? undefined : deployment,
    names: [...serviceNames(serviceName, namespace), ...extra],
    policy
  }
}
