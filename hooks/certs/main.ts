/**
 * The webhook certificate's entry point (`node dist/hooks/certs/main.js`), run by the chart as a
 * Job at install and upgrade and as a weekly CronJob. Idempotent: it keeps a valid certificate,
 * and otherwise issues one (and a CA when needed), writes the TLS Secret, makes every webhook of
 * the named ValidatingWebhookConfigurations trust the CA, and, when it replaced a certificate the
 * hook Pods were already serving, restarts their Deployment (they read the certificate at start).
 *
 * Environment: `NAMESPACE`, `SECRET_NAME`, `SERVICE_NAME` (required); `WEBHOOK_CONFIGURATIONS`
 * (comma-separated; every one listed must come to exist: the Job is applied in the same manifest
 * as the configurations, and both Helm and `kubectl apply` create it first, so a run that skipped a
 * configuration not there yet would leave it without a caBundle, every admission call failing TLS;
 * the run waits `WEBHOOK_WAIT_SECONDS`, 120, for it, then fails and the Job retries);
 * `DEPLOYMENT_NAME` (optional); `EXTRA_SANS` (comma-separated DNS names or IP
 * addresses besides the Service's, for a webhook reached another way); `CA_VALIDITY_DAYS` (3650),
 * `CERT_VALIDITY_DAYS` (730), `RENEW_BEFORE_DAYS` (90). The API is reached in-cluster, or through
 * `KUBECONFIG`. Logs are JSON lines; exit 0 when done, 1 on any failure (the Job retries).
 */
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  ApiException,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Secret
} from '@kubernetes/client-node'
import type { Logger } from 'pino'
import { processLogger } from '../logger.ts'
import { carryOut, plan, type CertBundle } from './issue.ts'
import { readCertsConfig, type CertsConfig } from './config.ts'

function decode(secret: V1Secret | undefined, key: string): string | undefined {
  const value = secret?.data?.[key]
  return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : undefined
}

function isStatus(err: unknown, code: number): boolean {
  return err instanceof ApiException && err.code === code
}

const POLL_MS = 2000

/**
 * `read()` until it stops answering 404, polling every 2 s; `waiting` is called once, at the
 * first 404. Past `deadline` the 404 becomes an error saying `missing`.
 */
async function waitFor<T>(read: () => Promise<T>, deadline: number, waiting: () => void, missing: string): Promise<T> {
  let said = false
  for (;;) {
    try {
      return await read()
    } catch (err) {
      if (!isStatus(err, 404)) throw err
    }
    if (Date.now() >= deadline) throw new Error(missing)
    if (!said) waiting()
    said = true
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))))
  }
}

async function run(config: CertsConfig, kc: KubeConfig, log: Logger): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api)
  const admission = kc.makeApiClient(AdmissionregistrationV1Api)
  const apps = kc.makeApiClient(AppsV1Api)
  const { namespace, secretName: name } = config

  let secret: V1Secret | undefined
  try {
    secret = await core.readNamespacedSecret({ name, namespace })
  } catch (err) {
    if (!isStatus(err, 404)) throw err
  }
  const stored: Partial<CertBundle> | undefined =
    secret === undefined
      ? undefined
      : {
          cert: decode(secret, 'tls.crt'),
          key: decode(secret, 'tls.key'),
          caCert: decode(secret, 'ca.crt'),
          caKey: decode(secret, 'ca.key')
        }
  const now = new Date()
  const decided = plan(stored, config.names, now, config.policy)
  const { bundle, caBundle } = carryOut(stored, decided, config.names, now, config.policy)

  if (decided.action === 'keep') {
    log.info({ secret: name }, 'certificate valid; kept')
  } else {
    const data = {
      'tls.crt': Buffer.from(bundle.cert).toString('base64'),
      'tls.key': Buffer.from(bundle.key).toString('base64'),
      'ca.crt': Buffer.from(bundle.caCert).toString('base64'),
      'ca.key': Buffer.from(bundle.caKey).toString('base64')
    }
    const labels = { 'app.kubernetes.io/part-of': 'gpuhooks', 'app.kubernetes.io/component': 'webhook' }
    if (secret === undefined) {
      await core.createNamespacedSecret({ namespace, body: { metadata: { name, namespace, labels }, type: 'kubernetes.io/tls', data } })
    } else {
      // resourceVersion kept: a concurrent writer makes this fail (409) and the Job retry re-plans.
      await core.replaceNamespacedSecret({ name, namespace, body: { ...secret, type: 'kubernetes.io/tls', data } })
    }
    log.info({ secret: name, action: decided.action, reason: decided.reason, names: config.names }, 'certificate issued')
  }

  const encoded = Buffer.from(caBundle).toString('base64')
  const deadline = Date.now() + config.webhookWaitSeconds * 1000
  for (const configName of config.webhookConfigurations) {
    const configuration = await waitFor(
      () => admission.readValidatingWebhookConfiguration({ name: configName }),
      deadline,
      () => log.info({ configuration: configName }, 'webhook configuration not there yet; waiting'),
      `ValidatingWebhookConfiguration ${configName} does not exist after ${config.webhookWaitSeconds} s (WEBHOOK_WAIT_SECONDS)`
    )
    const webhooks = configuration.webhooks ?? []
    if (webhooks.every((w) => w.clientConfig.caBundle === encoded)) continue
    for (const webhook of webhooks) webhook.clientConfig.caBundle = encoded
    await admission.replaceValidatingWebhookConfiguration({ name: configName, body: configuration })
    log.info({ configuration: configName, webhooks: webhooks.map((w) => w.name) }, 'caBundle written')
  }

  // A Pod that started before the Secret existed reads the new certificate at its start anyway;
  // only a replaced certificate needs a restart.
  const replaced = decided.action !== 'keep' && stored?.cert !== undefined
  if (replaced && config.deploymentName !== undefined) {
    const patch = { spec: { template: { metadata: { annotations: { 'gpuhooks.gpustack.ai/certificate-issued': now.toISOString() } } } } }
    try {
      await apps.patchNamespacedDeployment(
        { name: config.deploymentName, namespace, body: patch },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch)
      )
      log.info({ deployment: config.deploymentName }, 'hook Pods restarted for the new certificate')
    } catch (err) {
      if (!isStatus(err, 404)) throw err
      log.info({ deployment: config.deploymentName }, 'deployment not found; no restart')
    }
  }
}

async function main(): Promise<void> {
  const log = processLogger({ level: process.env['LOG_LEVEL'] ?? 'info' })
  const config = readCertsConfig(process.env)
  const kc = new KubeConfig()
  kc.loadFromDefault()
  await run(config, kc, log)
}

main().catch((err: unknown) => {
  const message = err instanceof ApiException ? `API ${err.code}: ${String(err.body)}` : err instanceof Error ? err.message : String(err)
  console.error(JSON.stringify({ level: 'fatal', msg: message }))
  process.exit(1)
})
