// A real control plane on loopback for the cluster tests: etcd,
// kube-apiserver and kube-controller-manager, built from source by
// ../build-binaries.sh, with throwaway certificates in a temporary directory.
// No scheduler and no kubelet: Pods stay Pending unless a test stamps them.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:https'
import { freePorts } from '../../support/ports.ts'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { makeClusterCerts, type ClusterCerts } from './certs.ts'
import { ownDirectory, releaseDirectory, startProcess, startWatchdog, stopProcess, tailLog, type ManagedProcess } from './processes.ts'

/** A running test cluster. */
export interface TestCluster {
  /** The temporary directory with certificates, kubeconfig, etcd data and logs. */
  dir: string
  /** The API server's URL, `https://127.0.0.1:<port>`. */
  server: string
  /** Path of a kubeconfig that authenticates as a `system:masters` admin. */
  kubeconfig: string
  /** The cluster CA, which signed the API server's serving certificate. */
  caCertPem: string
  /** etcd's client URL, for a second API server on the same etcd (workload-cluster.ts). */
  etcdUrl: string
  /** Log files of the control-plane processes, for debugging a failed test. */
  logs: { etcd: string; apiserver: string; controllerManager: string; scheduler?: string }
  /**
   * Runs `kubectl --kubeconfig <kubeconfig> ...args`, with `input` on stdin.
   * A non-zero exit rejects with kubectl's stderr unless `allowFail` is set.
   */
  kubectl(args: string[], opts?: KubectlOptions): Promise<CommandResult>
  /** Stops every process of the cluster and removes its directory. */
  stop(): Promise<void>
}

/** Options of {@link TestCluster.kubectl}. */
export interface KubectlOptions {
  input?: string
  allowFail?: boolean
}

/** What a finished command printed and how it exited. */
export interface CommandResult {
  code: number
  stdout: string
  stderr: string
}

/** Options of {@link startCluster}. */
export interface StartClusterOptions {
  /** Directory with `etcd`, `kube-apiserver` and `kube-controller-manager`. */
  binDir?: string
  /** How long the cluster may take to become ready (default 120 s). */
  readyTimeoutMs?: number
  /** Keep the temporary directory after stop() or a failed start (also: GPUHOOKS_KEEP_CLUSTER=1). */
  keepDir?: boolean
  /**
   * For a real node (node.ts): the non-loopback address the API server binds, advertises as the
   * `kubernetes` Service's endpoint and names in its serving certificate, so that Pods reach it
   * through the Service; it also calls kubelets with the admin client certificate.
   */
  nodeAddress?: string
  /** Controllers to run besides the default set (a real node needs Deployments, Jobs, EndpointSlices). */
  extraControllers?: readonly string[]
  /**
   * Also run kube-scheduler, without a node: it places Pods on Node objects a scenario writes and
   * allocates their ResourceClaims from hand-written ResourceSlices (a real node starts its own).
   */
  scheduler?: boolean
}

const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager'] as const
const SERVICE_CIDR = '10.96.0.0/16'
/** The first address of the Service range, which the `kubernetes` Service gets. */
const KUBERNETES_SERVICE_IP = '10.96.0.1'
const BUILD_SCRIPT = fileURLToPath(new URL('../build-binaries.sh', import.meta.url))

/**
 * Starts etcd, kube-apiserver and kube-controller-manager on free loopback
 * ports and resolves once the API server is ready and the `default`
 * ServiceAccount exists in namespace `default` (so Pods pass the ServiceAccount
 * admission plugin). The binaries come from `opts.binDir`, else from
 * `$GPUHOOKS_K8S_BIN` when it holds all three, else from
 * tests/cluster/build-binaries.sh, which builds them once per machine.
 * On failure everything started is stopped and the error carries the tail of
 * the log of the process that failed.
 */
export async function startCluster(opts: StartClusterOptions = {}): Promise<TestCluster> {
  const binDir = await findBinaries(opts.binDir)
  if (opts.scheduler === true && !existsSync(join(binDir, 'kube-scheduler'))) throw new Error(`${binDir} lacks kube-scheduler`)
  const keepDir = opts.keepDir ?? process.env['GPUHOOKS_KEEP_CLUSTER'] === '1'
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 120_000)

  const dir = await mkdtemp(join(tmpdir(), 'gpuhooks-cluster-'))
  if (!keepDir) ownDirectory(dir)
  const pidFile = join(dir, 'pids')
  const watchdog = startWatchdog(keepDir ? undefined : dir, pidFile)
  const processes: ManagedProcess[] = []

  const stop = async (): Promise<void> => {
    // Controller manager first, etcd last: each depends on the one after it.
    for (const proc of [...processes].reverse()) {
      await stopProcess(proc)
    }
    watchdog.kill('SIGKILL')
    if (!keepDir) {
      await rm(dir, { recursive: true, force: true, maxRetries: 3 })
      releaseDirectory(dir)
    }
  }

  try {
    const address = opts.nodeAddress ?? '127.0.0.1'
    const certs = await makeClusterCerts(dir, KUBERNETES_SERVICE_IP, opts.nodeAddress === undefined ? [] : [opts.nodeAddress])
    const [etcdPort, etcdPeerPort, apiPort] = await freePorts(3)
    const server = `https://${address}:${apiPort}`
    const kubeconfig = join(dir, 'admin.kubeconfig')
    await writeFile(kubeconfig, kubeconfigYaml(server, certs))
    const logs = {
      etcd: join(dir, 'etcd.log'),
      apiserver: join(dir, 'kube-apiserver.log'),
      controllerManager: join(dir, 'kube-controller-manager.log'),
      ...(opts.scheduler === true ? { scheduler: join(dir, 'kube-scheduler.log') } : {})
    }
    const start = (name: string, args: string[], logFile: string): ManagedProcess => {
      const proc = startProcess(name, join(binDir, name), args, logFile, pidFile)
      processes.push(proc)
      return proc
    }

    const etcdUrl = `http://127.0.0.1:${etcdPort}`
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`
    start(
      'etcd',
      [
        '--name=gpuhooks',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=gpuhooks=${peerUrl}`,
        // Test data need not survive a power cut.
        '--unsafe-no-fsync'
      ],
      logs.etcd
    )

    const apiserver = start(
      'kube-apiserver',
      [
        `--etcd-servers=${etcdUrl}`,
        `--bind-address=${address}`,
        `--secure-port=${apiPort}`,
        `--advertise-address=${address}`,
        // The reconciler would publish 127.0.0.1 as the `kubernetes` Service's
        // endpoint, which endpoint validation rejects as a loopback address.
        ...(opts.nodeAddress === undefined
          ? ['--endpoint-reconciler-type=none']
          : [
              `--kubelet-client-certificate=${certs.adminCert}`,
              `--kubelet-client-key=${certs.adminKey}`,
              '--kubelet-preferred-address-types=InternalIP'
            ]),
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        `--tls-cert-file=${certs.serverCert}`,
        `--tls-private-key-file=${certs.serverKey}`,
        `--client-ca-file=${certs.caCert}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${certs.serviceAccountPub}`,
        `--service-account-signing-key-file=${certs.serviceAccountKey}`,
        '--authorization-mode=RBAC',
        '--allow-privileged=true',
        '--enable-priority-and-fairness=false',
        '--profiling=false'
      ],
      logs.apiserver
    )

    await waitFor('the API server to answer /readyz with 200', apiserver, deadline, async () => {
      return (await httpsGet(server, '/readyz', certs)) === 200
    })

    // Started only now: it gives up if the API server is not healthy soon.
    const controllerManager = start(
      'kube-controller-manager',
      [
        `--kubeconfig=${kubeconfig}`,
        // No HTTPS endpoint (nothing probes it), and so no delegated authentication.
        '--secure-port=0',
        '--leader-elect=false',
        '--use-service-account-credentials=false',
        // Canonical names; the short aliases (garbagecollector, namespace, ...) work too.
        '--controllers=' +
          [
            'garbage-collector-controller',
            'namespace-controller',
            'serviceaccount-controller',
            'serviceaccount-token-controller',
            'root-ca-certificate-publisher-controller',
            ...(opts.extraControllers ?? [])
          ].join(','),
        `--service-account-private-key-file=${certs.serviceAccountKey}`,
        `--root-ca-file=${certs.caCert}`,
        '--profiling=false'
      ],
      logs.controllerManager
    )

    await waitFor('the ServiceAccount default/default', controllerManager, deadline, async () => {
      const path = '/api/v1/namespaces/default/serviceaccounts/default'
      return (await httpsGet(server, path, certs)) === 200
    })
    if (logs.scheduler !== undefined) {
      start(
        'kube-scheduler',
        [`--kubeconfig=${kubeconfig}`, '--leader-elect=false', '--secure-port=0', '--profiling=false'],
        logs.scheduler
      )
    }

    return {
      dir,
      server,
      kubeconfig,
      caCertPem: await readFile(certs.caCert, 'utf8'),
      etcdUrl,
      logs,
      kubectl: (args, kubectlOpts) => kubectl(kubeconfig, args, kubectlOpts),
      stop
    }
  } catch (error) {
    await stop()
    if (!keepDir && error instanceof Error) {
      error.message += '\n(the cluster directory is removed; GPUHOOKS_KEEP_CLUSTER=1 keeps it)'
    }
    throw error
  }
}

/** The binary directory: the caller's, the environment's, or the build script's. */
async function findBinaries(binDir: string | undefined): Promise<string> {
  if (binDir !== undefined) {
    const missing = BINARIES.filter((name) => !existsSync(join(binDir, name)))
    if (missing.length > 0) {
      throw new Error(`${binDir} lacks ${missing.join(', ')}`)
    }
    return binDir
  }
  const fromEnv = process.env['GPUHOOKS_K8S_BIN']
  if (fromEnv !== undefined && BINARIES.every((name) => existsSync(join(fromEnv, name)))) {
    return fromEnv
  }
  // Prints progress on stderr (shown as it comes) and the directory last on stdout.
  const result = await runCommand('bash', [BUILD_SCRIPT], { stderr: 'inherit' })
  const lastLine = result.stdout.trim().split('\n').pop()?.trim()
  if (result.code !== 0 || lastLine === undefined || lastLine === '') {
    throw new Error(`${BUILD_SCRIPT} failed with exit code ${result.code}; see its output above`)
  }
  return lastLine
}

async function kubectl(kubeconfig: string, args: string[], opts: KubectlOptions = {}): Promise<CommandResult> {
  const result = await runCommand('kubectl', [`--kubeconfig=${kubeconfig}`, ...args], { input: opts.input })
  if (result.code !== 0 && opts.allowFail !== true) {
    throw new Error(`kubectl ${args.join(' ')} exited with ${result.code}: ${result.stderr.trim()}`)
  }
  return result
}

/**
 * Runs `command` with `input` on its stdin and collects what it prints. Every stream of the child
 * has an error handler: a command that exits before reading all of its input (the pipe breaks,
 * EPIPE) is that command's failure, reported with its exit code and stderr, never an unhandled
 * error that ends the test process. Resolves once the child has exited and its stdin has
 * settled; rejects when the command cannot be started, or when it exits 0 without having taken
 * all of its input (nothing else would show that the input was ignored).
 */
export function runCommand(
  command: string,
  args: string[],
  opts: { input?: string | undefined; stderr?: 'pipe' | 'inherit' } = {}
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const input = opts.input ?? ''
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', opts.stderr ?? 'pipe'] })
    let stdout = ''
    let stderr = ''
    let streamError: Error | undefined
    let inputTaken = false
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
    let stdinSettled = child.stdin === null
    let settled = false
    const fail = (error: Error): void => {
      if (settled) return
      settled = true
      reject(error)
    }
    const finish = (): void => {
      if (settled || exit === undefined || !stdinSettled) return
      settled = true
      const code = exit.code ?? (exit.signal === null ? 1 : 128)
      if (code === 0 && !inputTaken && input !== '') {
        const why = streamError !== undefined ? ` (${streamError.message})` : ''
        reject(
          new Error(
            `${[command, ...args].join(' ')} exited 0 before reading its input of ${Buffer.byteLength(input)} bytes${why}; stderr: ${stderr.trim()}`
          )
        )
        return
      }
      resolve({ code, stdout, stderr })
    }
    const noteStreamError = (error: Error): void => {
      streamError ??= error
    }
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.stdout?.on('error', noteStreamError)
    child.stderr?.on('error', noteStreamError)
    // A child that exits without reading breaks the pipe: EPIPE arrives here, not as a crash.
    child.stdin?.on('error', noteStreamError)
    child.stdin?.once('finish', () => (inputTaken = true))
    child.stdin?.once('close', () => {
      stdinSettled = true
      finish()
    })
    child.once('error', (error) => fail(new Error(`${command} could not be run: ${error.message}`)))
    child.once('close', (code, signal) => {
      exit = { code, signal }
      finish()
    })
    child.stdin?.end(input)
  })
}

/**
 * Polls `check` until it holds; rejects when `proc` exits first or the
 * deadline passes, in both cases with the tail of `proc`'s log.
 */
async function waitFor(what: string, proc: ManagedProcess, deadline: number, check: () => Promise<boolean>): Promise<void> {
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
  void proc.exited.then((result) => (exit = result))
  for (;;) {
    if (exit !== undefined) {
      const how = exit.signal ?? `code ${exit.code}`
      throw new Error(`${proc.name} exited (${how}) while waiting for ${what}; last lines of ${proc.logFile}:\n${tailLog(proc.logFile)}`)
    }
    if (await check()) return
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; last lines of ${proc.logFile}:\n${tailLog(proc.logFile)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/** The HTTP status of a GET as the admin, or 0 when the server does not answer. */
async function httpsGet(server: string, path: string, certs: ClusterCerts): Promise<number> {
  const [ca, cert, key] = await Promise.all([readFile(certs.caCert), readFile(certs.adminCert), readFile(certs.adminKey)])
  return new Promise((resolve) => {
    const req = request(new URL(path, server), { ca, cert, key, timeout: 5000 }, (res) => {
      res.resume()
      res.once('end', () => resolve(res.statusCode ?? 0))
      res.once('error', () => resolve(0))
      res.once('error', () => resolve(0))
    })
    req.once('timeout', () => req.destroy())
    req.once('error', () => resolve(0))
    req.end()
  })
}

function kubeconfigYaml(server: string, certs: ClusterCerts): string {
  // JSON strings are valid YAML scalars, which keeps odd temp paths safe.
  const q = JSON.stringify
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: gpuhooks-test',
    '  cluster:',
    `    server: ${q(server)}`,
    `    certificate-authority: ${q(certs.caCert)}`,
    'users:',
    '- name: admin',
    '  user:',
    `    client-certificate: ${q(certs.adminCert)}`,
    `    client-key: ${q(certs.adminKey)}`,
    'contexts:',
    '- name: gpuhooks-test',
    '  context:',
    '    cluster: gpuhooks-test',
    '    user: admin',
    'current-context: gpuhooks-test',
    ''
  ].join('\n')
}
