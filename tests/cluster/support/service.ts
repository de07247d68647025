/**
 * The hook service under test, as a real process (`npm start`'s command, started by
 * tests/support/service.ts) with its HTTPS admission
 * listener, registered with the API server through a ValidatingWebhookConfiguration whose
 * caBundle is a test CA. The API server itself then calls our webhook on `kubectl apply`.
 */
import { readFileSync } from 'node:fs'
import { freePorts } from '../../support/ports.ts'
import { startService } from '../../support/service.ts'
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

/**
 * Starts the service (tests/support/service.ts, the one starter of every layer) with TLS from a
 * test CA in `cluster.dir` and the variables of `env` besides, and waits until both listeners are ready.
 */
export async function startHookService(cluster: TestCluster, env: Record<string, string> = {}): Promise<HookService> {
  const certs = await makeWebhookCerts(cluster.dir)
  const [port, webhookPort] = (await freePorts(2)) as [number, number]
  const started = await startService(
    {
      PORT: String(port),
      WEBHOOK_PORT: String(webhookPort),
      TLS_CERT_FILE: certs.serverCert,
      TLS_KEY_FILE: certs.serverKey,
      LOG_LEVEL: 'info',
      ...env
    },
    2,
    { startTimeoutMs: 120_000 }
  )
  const { child } = started
  const caBundle = readFileSync(certs.caCert).toString('base64')
  const service: HookService & { caBundle: string } = {
    hooksUrl: `http://127.0.0.1:${port}`,
    admissionUrl: `https://127.0.0.1:${webhookPort}`,
    caBundle,
    logs: () =>
      started
        .lines()
        .map((line) => JSON.stringify(line))
        .join('\n'),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await started.exit
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
