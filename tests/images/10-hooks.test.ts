/**
 * The hook image, run as the chart runs it. The chart is installed with Helm on a real API server
 * (no kubelet: this file plays it with podman), and each container is started from its rendered
 * Pod template (kube-podman.ts: user and groups, capabilities, read-only root, no_new_privs,
 * seccomp, environment, command, volumes), never from a restatement of it:
 *
 * - the certificate Job's container, with the chart's RBAC through a service account token as a
 *   kubelet mounts it, issues the webhook Secret and writes the caBundles;
 * - the hook Deployment's container, serving that Secret's certificate: node is PID 1, uid 1000,
 *   no capability, a read-only root; the route tests (tests/http/routes.test.ts) pass over the
 *   network against it, and the process-contract tests (tests/http/process.test.ts) pass with the
 *   service started in the image; SIGTERM to PID 1 drains as the README says;
 * - the workload agent Deployment's container turns ready and takes its Lease.
 *
 * Start times are printed as comments (measured, not asserted).
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import type { PodSpec } from 'kubernetes-types/core/v1.d.ts'
import { CHART, helmPath } from '../../deploy/chart/generate.ts'
import { startCluster } from '../cluster/support/cluster.ts'
import { installCrds, KUBESWIFT_CRDS } from '../cluster/support/env.ts'
import { freePorts } from '../support/ports.ts'
import { OWNED, addressOf, exitCode, hostPid, inspect, removeContainers, waitForLog } from './support/containers.ts'
import { buildImages, ROOT } from './support/images.ts'
import { containerRun, type PodmanRun, type RunContext } from './support/kube-podman.ts'
import { CONTAINERS_DIR, TEST_NETWORK, assertOnBridge, containersEnv, ensureNetwork, podman, run } from './support/podman.ts'
import { secretVolume } from './support/secret-volume.ts'
import { privilegeOf } from './support/ssh-client.ts'

const NS = 'gpuhooks-system'
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')

const refs = await buildImages()
await removeContainers()
t.teardown(removeContainers)
const network = await ensureNetwork()
const work = mkdtempSync(join(tmpdir(), 'gpuhooks-hooks-image-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
const imageUser = (await podman(['image', 'inspect', '--format', '{{.Config.User}}', refs.hooks])).trim()

const cluster = await startCluster()
t.teardown(() => cluster.stop())
// KubeSwift's CRDs too: the chart installs the cell pool controller and its agent where they are served.
await installCrds(cluster, [join(ROOT, 'tests', 'cluster', 'fixtures', 'metacontroller-crds.yaml'), KUBESWIFT_CRDS])
const helm = helmPath()
await run(helm, ['install', 'gpuhooks', CHART, '--namespace', NS, '--create-namespace', '--kubeconfig', cluster.kubeconfig])
const manifest = await run(helm, ['get', 'manifest', 'gpuhooks', '--namespace', NS, '--kubeconfig', cluster.kubeconfig])
const installed = parseAllDocuments(manifest)
  .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: any } | null)
  .filter((o) => o !== null)

/** The Pod template of the installed workload `kind`/`name`. */
function template(kind: string, name: string): PodSpec {
  const object = installed.find((o) => o?.kind === kind && o.metadata?.name === name)
  if (object === undefined || object === null) throw new Error(`the release has no ${kind} ${name}`)
  return object.spec.template.spec as PodSpec
}

/** The directory a kubelet mounts for a Pod of service account `account`: a token, the CA, the namespace. */
async function serviceAccount(account: string): Promise<RunContext['serviceAccount']> {
  const dir = join(work, `sa-${account}`)
  mkdirSync(dir, { recursive: true })
  const token = (await cluster.kubectl(['create', 'token', account, '--namespace', NS, '--duration=2h'])).stdout.trim()
  writeFileSync(join(dir, 'token'), token, { mode: 0o644 })
  writeFileSync(join(dir, 'ca.crt'), cluster.caCertPem, { mode: 0o644 })
  writeFileSync(join(dir, 'namespace'), NS, { mode: 0o644 })
  return { dir, host: '127.0.0.1', port: Number(new URL(cluster.server).port) }
}

function context(podName: string, extra: Partial<RunContext> = {}): RunContext {
  return { podName, namespace: NS, image: refs.hooks, imageUser, volumes: {}, ...extra }
}

/** GET over HTTP(S): status, headers and body. */
function get(url: string, options: { ca?: Buffer; servername?: string; method?: string; body?: string } = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    const target = new URL(url)
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest
    const req = send(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: options.method ?? 'GET',
        ...(options.ca !== undefined ? { ca: options.ca, servername: options.servername } : {}),
        headers: options.body !== undefined ? { 'content-type': 'application/json' } : {}
      },
      (res) => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('error', reject)
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      }
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

/**
 * Runs a tap test file on its own (a TAP stream) with `env`; its exit code and output. A file run
 * on its own gives itself 30 s in all unless TAP_TIMEOUT says otherwise, which a loaded machine
 * exceeds (process.test.ts starts the service in a container four times): it gets this file's
 * bound instead, a failure bound, never a wait.
 */
function runTestFile(file: string, env: Record<string, string>): Promise<{ code: number; out: string }> {
  const base = Object.fromEntries(Object.entries(containersEnv()).filter(([k]) => !/^(TAP|_TAPJS|NODE_OPTIONS)/.test(k)))
  return new Promise((resolve) =>
    execFile(TSX, [file], { cwd: ROOT, env: { ...base, TAP_TIMEOUT: '600', ...env }, maxBuffer: 64 << 20 }, (error, stdout) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, out: stdout })
    )
  )
}

/** Resolves once `check` answers true (retrying on each turn of a short pacing timer), or rejects after `deadlineMs`. */
async function until(what: string, check: () => Promise<boolean>, deadlineMs = 120_000): Promise<void> {
  const deadline = Date.now() + deadlineMs
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${deadlineMs} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

// The certificate Job's container: the webhook Secret the hook container serves.
const certsStarted = Date.now()
const certsRun = containerRun(
  template('Job', 'gpuhooks-certs-1'),
  'certs',
  context('gpuhooks-certs-1-test', { serviceAccount: await serviceAccount('gpuhooks-certs') })
)
const certsOutput = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
  execFile(
    'podman',
    ['run', '--rm', OWNED, '--network=host', '--hostname=gpuhooks-certs-1-test', ...certsRun.flags, certsRun.image, ...certsRun.args],
    { env: containersEnv() },
    (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr })
  )
)
const certsSeconds = (Date.now() - certsStarted) / 1000
const tlsSecret = JSON.parse(
  (await cluster.kubectl(['get', 'secret', 'gpuhooks-webhook-tls', '--namespace', NS, '-o', 'json'])).stdout
) as {
  data: Record<string, string>
}
const secretData = Object.fromEntries(Object.entries(tlsSecret.data).map(([k, v]) => [k, Buffer.from(v, 'base64')]))
const CA = secretData['ca.crt'] as Buffer
const SERVERNAME = `gpuhooks.${NS}.svc`

const hooksPod = template('Deployment', 'gpuhooks')
const tlsVolume = (hooksPod.volumes ?? []).find((v) => v.secret?.secretName === 'gpuhooks-webhook-tls')
if (tlsVolume === undefined) throw new Error('the hook Deployment mounts no gpuhooks-webhook-tls volume')
const tlsDir = secretVolume(tlsVolume, join(work, 'tls'), secretData).dir

/** `podman run --detach` of `run` as `container`, owned by this process, on `network`. */
async function runDetached(container: string, network: string, hostname: string, run: PodmanRun): Promise<void> {
  await podman([
    'run',
    '--detach',
    OWNED,
    `--name=${container}`,
    `--network=${network}`,
    `--hostname=${hostname}`,
    ...run.flags,
    run.image,
    ...run.args
  ])
}

/** Starts the hook container as the Deployment does, on the test network; its address once both listeners are up. */
async function startHooks(name: string): Promise<{ container: string; address: string; startedMs: number; listeningMs: number }> {
  const run = containerRun(hooksPod, 'hooks', context(name, { volumes: { [tlsVolume?.name ?? '']: tlsDir } }))
  const container = `gpuhooks-${name}-${process.pid}`
  const before = Date.now()
  await runDetached(container, network, name, run)
  const line = await waitForLog(container, /"msg":"admission listening/)
  // RFC 3339 with nanoseconds; Date.parse takes milliseconds.
  const started = Date.parse(String((await inspect(container)).State.StartedAt).replace(/(\.\d{3})\d*/, '$1'))
  const listening = (JSON.parse(line) as { time: number }).time
  const address = await addressOf(container, TEST_NETWORK)
  await assertOnBridge(address)
  return { container, address, startedMs: started - before, listeningMs: listening - before }
}

const hooks = await startHooks('gpuhooks-test-hooks')
// Everything above runs before the first test: tap ends the file once its queued tests are done.

t.test('the certificate Job’s container issues the webhook Secret with the chart’s RBAC', async (t) => {
  t.equal(certsOutput.code, 0, certsOutput.stderr)
  t.match(certsOutput.stdout, /"msg":"certificate issued"/)
  const configuration = JSON.parse(
    (await cluster.kubectl(['get', 'validatingwebhookconfiguration', 'gpuhooks-instance', '-o', 'json'])).stdout
  )
  t.equal(configuration.webhooks[0].clientConfig.caBundle, tlsSecret.data['ca.crt'], 'the caBundle is the Secret’s CA')
  t.comment(`certificate Job container: podman run to exit ${certsSeconds.toFixed(1)} s`)
})

t.test('node is PID 1, as uid 1000 with no capability, on a read-only root', async (t) => {
  const pid = await hostPid(hooks.container)
  t.equal(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), 'node\0dist/hooks/main.js\0', 'the chart’s command, exec form')
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  t.match(status, /^NSpid:\s+\d+\s+1$/m, 'PID 1 in its namespace')
  t.match(status, /^Uid:\s+1000\s+1000\s+1000\s+1000$/m)
  t.match(status, /^Gid:\s+1000\s+1000\s+1000\s+1000$/m)
  const privilege = privilegeOf(status)
  t.same(
    [privilege.capEff, privilege.capPrm, privilege.capBnd, privilege.capAmb, privilege.noNewPrivs],
    ['0000000000000000', '0000000000000000', '0000000000000000', '0000000000000000', '1']
  )
  t.match(status, /^Seccomp:\s+2$/m, 'the runtime’s default seccomp filter')
  const write = await podman([
    'exec',
    hooks.container,
    'sh',
    '-c',
    '{ echo x > /app/probe; } 2>&1 || echo refused; echo x > /tmp/probe && echo tmp-writable'
  ])
  t.match(write, /Read-only file system\s*\nrefused\ntmp-writable\n/)
  t.comment(`hook container: podman run to process start ${hooks.startedMs} ms, to both listeners up ${hooks.listeningMs} ms`)
})

t.test('the probes answer, and admission serves the certificate the Job issued', async (t) => {
  t.equal((await get(`http://${hooks.address}:8080/healthz`)).status, 200)
  t.equal((await get(`http://${hooks.address}:8080/readyz`)).status, 200)
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'u-1', kind: { group: 'worker.gpustack.ai', version: 'v1alpha1', kind: 'Instance' }, operation: 'DELETE' }
  }
  const answer = await get(`https://${hooks.address}:9443/admission/instance`, {
    ca: CA,
    servername: SERVERNAME,
    method: 'POST',
    body: JSON.stringify(review)
  })
  t.equal(answer.status, 200, answer.body)
  t.match(JSON.parse(answer.body), { response: { uid: 'u-1' } })
})

t.test('the route tests pass over the network against the image', async (t) => {
  const caFile = join(work, 'ca.crt')
  writeFileSync(caFile, CA)
  const result = await runTestFile('tests/http/routes.test.ts', {
    GPUHOOKS_SERVICE_URL: `http://${hooks.address}:8080`,
    GPUHOOKS_ADMISSION_URL: `https://${hooks.address}:9443`,
    GPUHOOKS_ADMISSION_CA: caFile,
    GPUHOOKS_ADMISSION_SERVERNAME: SERVERNAME
  })
  t.equal(result.code, 0, result.code === 0 ? 'passed' : result.out.slice(-4000))
  t.notMatch(result.out, /^\s*not ok/m)
  t.match(result.out, /^ok \d+ - instance sync answers 200 with children and a full status/m)
  t.match(result.out, /^ok \d+ - admission denies with 422 and every problem joined/m)
  t.match(result.out, /^ok \d+ - an isolation sync relating 6000 Instances within the body limit is served/m)
  const metrics = (await get(`http://${hooks.address}:8080/metrics`)).body
  t.match(metrics, /^gpuhooks_hook_requests_total\{[^}]*hook="instance[^"]*sync"[^}]*\} [1-9]/m, 'the container answered them')
})

t.test('the process-contract tests pass with the service started in the image', async (t) => {
  const run = containerRun(hooksPod, 'hooks', context('gpuhooks-test-process', { volumes: { [tlsVolume.name]: tlsDir } }))
  const flags = run.flags.filter((f) => !f.startsWith('--env='))
  const result = await runTestFile('tests/http/process.test.ts', {
    GPUHOOKS_SERVICE_LAUNCHER: join(ROOT, 'tests', 'images', 'support', 'hooks-launcher.ts'),
    GPUHOOKS_CONTAINER_RUN: JSON.stringify({ ...run, flags })
  })
  t.equal(result.code, 0, result.code === 0 ? 'passed' : result.out.slice(-4000))
  t.notMatch(result.out, /^\s*not ok/m)
  t.match(result.out, /^ok \d+ - SIGTERM finishes a request in flight, then exits 0/m)
  t.match(result.out, /^ok \d+ - with TLS the admission listener serves HTTPS on WEBHOOK_PORT/m)
  // The launcher's copies of the TLS test's files: the service did run in containers.
  t.ok(existsSync(join(CONTAINERS_DIR, 'launch')), 'started through hooks-launcher.ts')
  rmSync(join(CONTAINERS_DIR, 'launch'), { recursive: true, force: true })
})

t.test(
  'SIGTERM to node as PID 1 drains: not ready, listeners closed after the delay, the request in flight answered, exit 0',
  async (t) => {
    const drained = await startHooks('gpuhooks-test-drain')
    const body = JSON.stringify({ controller: {}, parent: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } } })
    let status = 0
    let connection: unknown
    const socket = connect({ host: drained.address, port: 8080 })
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
    const answered = new Promise<void>((resolve) => {
      let text = ''
      socket.on('data', (c: Buffer) => {
        text += c.toString()
        const head = /^HTTP\/1\.1 (\d+)[^]*?\r\nconnection: ([^\r]+)\r\n/i.exec(text)
        if (head !== null) {
          status = Number(head[1])
          connection = head[2]
        }
      })
      socket.on('close', () => resolve())
    })
    // Headers and half the body now: the request is in flight when the signal lands.
    socket.write(
      `POST /hooks/isolation/customize HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`
    )
    const signalled = Date.now()
    await podman(['kill', '--signal=TERM', drained.container])
    await until('readyz 503', async () => (await get(`http://${drained.address}:8080/readyz`)).status === 503)
    t.equal((await get(`http://${drained.address}:8080/healthz`)).status, 200, 'alive while draining')
    await until(
      'listeners closed',
      () =>
        new Promise<boolean>((resolve) => {
          const probe = connect({ host: drained.address, port: 8080 })
          probe.once('connect', () => (probe.destroy(), resolve(false)))
          probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'))
        })
    )
    const closedAfter = Date.now() - signalled
    socket.end(body.slice(10))
    await answered
    t.equal(status, 200, 'the request in flight is answered')
    t.equal(connection, 'close')
    t.equal(await exitCode(drained.container), 0, 'exit 0')
    t.match(await podman(['logs', drained.container]), /"msg":"draining/)
    t.comment(`SIGTERM to listeners closed: ${closedAfter} ms (SHUTDOWN_DELAY_SECONDS defaults to 5)`)
  }
)

t.test('the workload agent’s container turns ready and takes its Lease, then stops on SIGTERM', async (t) => {
  const [port] = (await freePorts(1)) as [number]
  const run = containerRun(
    template('Deployment', 'gpuhooks-agent'),
    'agent',
    context('gpuhooks-agent-test', { serviceAccount: await serviceAccount('gpuhooks-agent') })
  )
  // The one change: on the host network, the port the test claimed instead of the chart's 8081.
  const flags = run.flags.map((f) => (/^--env=PORT=/.test(f) ? `--env=PORT=${port}` : f))
  t.equal(flags.filter((f) => f === `--env=PORT=${port}`).length, 1, 'the chart sets PORT')
  const container = `gpuhooks-agent-${process.pid}`
  const before = Date.now()
  await runDetached(container, 'host', 'gpuhooks-agent-test', { ...run, flags })
  await until('agent /readyz 200', async () => (await get(`http://127.0.0.1:${port}/readyz`)).status === 200)
  const readyMs = Date.now() - before
  await until('Lease held', async () => {
    const lease = await cluster.kubectl(['get', 'lease', 'gpuhooks-agent', '--namespace', NS, '-o', 'jsonpath={.spec.holderIdentity}'], {
      allowFail: true
    })
    return lease.stdout === 'gpuhooks-agent-test'
  })
  t.pass('the Lease gpuhooks-agent is held by the Pod’s name')
  await podman(['kill', '--signal=TERM', container])
  t.equal(await exitCode(container), 0)
  t.comment(`agent container: podman run to /readyz 200 in ${readyMs} ms`)
})
