/**
 * The process contract's environment (docs/README.md, "Process contract"): parsed once at start, every problem named.
 */
import { DEFAULT_BODY_LIMIT, DEFAULT_LIMITS, type Limits } from './app.ts'
import { parsePermittedNodeKeys } from '../k8s/node-keys.ts'
import type { HookContext } from '../metacontroller/descriptor.ts'

/** The parsed environment. */
export interface Config {
  port: number
  webhookPort: number
  tls: { certFile: string; keyFile: string } | undefined
  logLevel: string
  bodyLimit: number
  /** On SIGTERM: how long `/readyz` answers 503 before the listeners close. */
  shutdownDelayMs: number
  /** On SIGTERM: the whole drain, delay included; past it the process exits 1. */
  shutdownTimeoutMs: number
  limits: Limits
  /** What every hook is given beside its request (`PERMITTED_NODE_KEYS`). */
  context: HookContext
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
  const shutdownDelayMs = integer('SHUTDOWN_DELAY_SECONDS', 5, 0, 3600) * 1000
  if (shutdownDelayMs >= shutdownTimeoutMs) {
    problems.push(
      `SHUTDOWN_DELAY_SECONDS=${shutdownDelayMs / 1000} must be below SHUTDOWN_TIMEOUT_SECONDS=${shutdownTimeoutMs / 1000}, or nothing in flight could finish`
    )
  }
  const seconds = (name: string, fallbackMs: number, min: number): number => integer(name, fallbackMs / 1000, min, 3600) * 1000
  const requestTimeoutMs = seconds('REQUEST_TIMEOUT_SECONDS', DEFAULT_LIMITS.requestTimeoutMs, 1)
  const limits: Limits = {
    maxJsonDepth: integer('JSON_MAX_DEPTH', DEFAULT_LIMITS.maxJsonDepth, 32, 1000),
    maxEventLoopDelayMs: integer('MAX_EVENT_LOOP_DELAY_MS', DEFAULT_LIMITS.maxEventLoopDelayMs, 0, 600_000),
    maxHeapUsedBytes: integer('MAX_HEAP_USED_BYTES', DEFAULT_LIMITS.maxHeapUsedBytes, 0, Number.MAX_SAFE_INTEGER),
    maxInflightBytes: integer('MAX_INFLIGHT_BYTES', Math.max(DEFAULT_LIMITS.maxInflightBytes, bodyLimit), 0, Number.MAX_SAFE_INTEGER),
    retryAfterSeconds: integer('RETRY_AFTER_SECONDS', DEFAULT_LIMITS.retryAfterSeconds, 1, 3600),
    requestTimeoutMs,
    headersTimeoutMs: seconds('HEADERS_TIMEOUT_SECONDS', DEFAULT_LIMITS.headersTimeoutMs, 1),
    // Unset, it follows a shorter request timeout down; set above it, it could never fire.
    bodyStallTimeoutMs: seconds('BODY_STALL_TIMEOUT_SECONDS', Math.min(DEFAULT_LIMITS.bodyStallTimeoutMs, requestTimeoutMs), 1),
    keepAliveTimeoutMs: seconds('KEEP_ALIVE_TIMEOUT_SECONDS', DEFAULT_LIMITS.keepAliveTimeoutMs, 1)
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    problems.push(
      `HEADERS_TIMEOUT_SECONDS=${limits.headersTimeoutMs / 1000} must not exceed REQUEST_TIMEOUT_SECONDS=${limits.requestTimeoutMs / 1000}`
    )
  }
  if (limits.bodyStallTimeoutMs > limits.requestTimeoutMs) {
    problems.push(
      `BODY_STALL_TIMEOUT_SECONDS=${limits.bodyStallTimeoutMs / 1000} must not exceed REQUEST_TIMEOUT_SECONDS=${limits.requestTimeoutMs / 1000}, or it could never fire`
    )
  }
  const logLevel = env.LOG_LEVEL === undefined || env.LOG_LEVEL === '' ? 'info' : env.LOG_LEVEL
  if (!LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL=${logLevel} must be one of ${LEVELS.join(', ')}`)
  const certFile = env.TLS_CERT_FILE ?? ''
  const keyFile = env.TLS_KEY_FILE ?? ''
  if ((certFile === '') !== (keyFile === '')) {
    problems.push('TLS_CERT_FILE and TLS_KEY_FILE must be set together')
  }
  const permitted = parsePermittedNodeKeys(env.PERMITTED_NODE_KEYS)
  problems.push(...permitted.problems)
  if (problems.length > 0) throw new Error(`invalid environment: ${problems.join('; ')}`)
  const tls = certFile !== '' && keyFile !== '' ? { certFile, keyFile } : undefined
  const context: HookContext = { permittedNodeKeys: permitted.keys }
  return { port, webhookPort, tls, logLevel, bodyLimit, shutdownDelayMs, shutdownTimeoutMs, limits, context }
}
