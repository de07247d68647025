/**
 * The process contract's environment (spec README): parsed once at start, every problem named.
 */
import { DEFAULT_BODY_LIMIT } from './app.ts'

/** The parsed environment. */
export interface Config {
  port: number
  webhookPort: number
  tls: { certFile: string, keyFile: string } | undefined
  logLevel: string
  bodyLimit: number
  shutdownTimeoutMs: number
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** Reads the process contract's variables; throws naming the variable and the rule. */
export function readConfig(env: NodeJS.ProcessEnv): Config {
  const problems: string[] = []
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name]
    if (raw === undefined || raw === '') return fallback
    const value = Number(raw)
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name}=${raw} must be an integer from ${min} to ${max}`)
      return fallback
    }
    return value
  }
  const port = integer('PORT', 8080, 0, 65535)
  const webhookPort = integer('WEBHOOK_PORT', 9443, 0, 65535)
  const bodyLimit = integer('BODY_LIMIT', DEFAULT_BODY_LIMIT, 1024, 1024 * 1024 * 1024)
  const shutdownTimeoutMs = integer('SHUTDOWN_TIMEOUT_SECONDS', 25, 1, 3600) * 1000
  const logLevel = env.LOG_LEVEL === undefined || env.LOG_LEVEL === '' ? 'info' : env.LOG_LEVEL
  if (!LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL=${logLevel} must be one of ${LEVELS.join(', ')}`)
  const certFile = env.TLS_CERT_FILE ?? ''
  const keyFile = env.TLS_KEY_FILE ?? ''
  if ((certFile === '') !== (keyFile === '')) {
    problems.push('TLS_CERT_FILE and TLS_KEY_FILE must be set together')
  }
  if (problems.length > 0) throw new Error(`invalid environment: ${problems.join('; ')}`)
  const tls = certFile !== '' && keyFile !== '' ? { certFile, keyFile } : undefined
  return { port, webhookPort, tls, logLevel, bodyLimit, shutdownTimeoutMs }
}
