/**
 * The hook service under test, as a real process (`npm start`'s command) with its HTTPS admission
 * listener, registered with the API server through a ValidatingWebhookConfiguration whose
 * caBundle is a test CA. The API server itself then calls our webhook on `kubectl apply`.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePorts } from '../../support/ports.ts'
import { makeWebhookCerts } from './certs.ts'
import type { TestCluster } from './cluster.ts'

/** A running hook service. */
export interface HookService {
  /** Base URL of the plain-HTTP hooks listener, for the driver. */
  hooksUrl: string
  /** Base URL of the HTTPS admission listener. */
  admissionUrl: string
  /** The service's JSON log lines so far. */
  logs(): string
  stop(): Promise<void>
}

/** One webhook of the configuration: which path validates which resource. */
export interface WebhookTarget {
  /** Webhook name, a DNS subdomain such as `instances.worker.gpustack.ai`. */
  name: string
  path: string
  apiGroup: string
  apiVersion: string
  resource: string
  /** Metric label of the route (`admission_instance`), to see the API server call it. */
  hook: string
  /** A valid object the webhook admits; created with server-side dry-run to probe the wiring. */
  probe: Record<string, unknown>
}

/** Starts the service in `cluster.dir` with TLS and waits until both listeners are ready. */
export async function startHookService(cluster: TestCluster): Promise<HookService> {
  const certs = await makeWebhookCerts(cluster.dir)
  const [port, webhookPort] = (await freePorts(2)) as [number, number]
  const tsx = join(process.cwd(), 'node_modules', '.bin', 'tsx')
  const child: ChildProcess = spawn(tsx, ['hooks/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      WEBHOOK_PORT: String(webhookPort),
      TLS_CERT_FILE: certs.serverCert,
      TLS_KEY_FILE: certs.serverKey,
      LOG_LEVEL: 'info'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  let spawnError: Error | undefined
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()))
  // Every stream and the child itself have an error handler: a broken pipe or a failed start is
  // reported as the service's failure, with its output, not as a crash of the test file.
  const noteStreamError = (stream: string) => (err: Error) => (output += `\n[harness] service ${stream}: ${err.message}\n`)
  child.stdout?.on('error', noteStreamError('stdout'))
  child.stderr?.on('error', noteStreamError('stderr'))
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve())
    child.once('error', (err) => {
      spawnError = err
      resolve()
    })
  })
  const deadline = Date.now() + 120_000
  while ((output.match(/listening/g) ?? []).length < 2) {
    if (spawnError !== undefined) throw new Error(`hook service could not be started: ${spawnError.message}\n${output}`)
    if (child.exitCode !== null) throw new Error(`hook service exited with ${child.exitCode}:\n${output}`)
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`hook service did not start in 120 s:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  const caBundle = readFileSync(certs.caCert).toString('base64')
  const service: HookService & { caBundle: string } = {
    hooksUrl: `http://127.0.0.1:${port}`,
    admissionUrl: `https://127.0.0.1:${webhookPort}`,
    caBundle,
    logs: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null && spawnError === undefined) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(timer)
      }
    }
  }
  process.once('exit', () => child.kill('SIGKILL'))
  webhookCa.set(service, caBundle)
  return service
}

const webhookCa = new WeakMap<HookService, string>()

/** How many requests the service has answered on `hook`, from its /metrics. */
async function answered(service: HookService, hook: string): Promise<number> {
  const text = await (await fetch(`${service.hooksUrl}/metrics`)).text()
  let total = 0
  for (const line of text.split('\n')) {
    if (line.startsWith(`gpuhooks_hook_requests_total{hook="${hook}",`)) total += Number(line.split(' ').pop())
  }
  return total
}

/**
 * Registers `targets` as one ValidatingWebhookConfiguration calling the service by URL, with
 * failurePolicy Fail (a spec the webhook cannot judge is refused, not let through), and waits
 * until the API server actually calls each webhook: a server-side dry-run create of the target's
 * probe object must show up in the service's request count for that route.
 */
export async function registerWebhooks(cluster: TestCluster, service: HookService, targets: readonly WebhookTarget[]): Promise<void> {
  const caBundle = webhookCa.get(service)
  if (caBundle === undefined) throw new Error('registerWebhooks needs a service from startHookService')
  const configuration = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'gpuhooks-test' },
    webhooks: targets.map((target) => ({
      name: target.name,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
      clientConfig: { url: `${service.admissionUrl}${target.path}`, caBundle },
      rules: [
        {
          apiGroups: [target.apiGroup],
          apiVersions: [target.apiVersion],
          resources: [target.resource],
          operations: ['CREATE', 'UPDATE'],
          scope: '*'
        }
      ]
    }))
  }
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(configuration) })
  for (const target of targets) {
    const deadline = Date.now() + 120_000
    for (;;) {
      const before = await answered(service, target.hook)
      await cluster.kubectl(['create', '--dry-run=server', '-f', '-'], { input: JSON.stringify(target.probe), allowFail: true })
      if ((await answered(service, target.hook)) > before) break
      if (Date.now() > deadline) throw new Error(`the API server did not call webhook ${target.name} within 30 s`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}
