/**
 * A second kube-apiserver on the test cluster's etcd, under its own `--etcd-prefix`: the
 * workload cluster the cells of a pool join (docs/testing.md, "The workload side runs for real too").
 *
 * It shares the test cluster's CA and serving certificate, and adds a static token for the
 * workload agent's identity (`gpuhooks-workload-agent`, no groups), so that the agent's access is
 * exactly what deploy/agent-rbac/workload-cluster.yaml grants. It authorizes as a real cluster
 * does, with the Node authorizer before RBAC and the NodeRestriction admission plugin, so a test
 * that speaks as a kubelet (`kubelet(name)`) has exactly a kubelet's rights. It can be stopped and
 * started again on the same port, to play an outage. No controller manager: nothing is garbage
 * collected and no kubelet runs; the test plays the kubelets.
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePorts } from '../../support/ports.ts'
import { makeClientCert } from './certs.ts'
import type { TestCluster } from './cluster.ts'
import { KubeClient, type KubeConnection } from './kube.ts'
import { startProcess, stopProcess, tailLog, type ManagedProcess } from './processes.ts'

/** A running (or stopped) workload API server. */
export interface WorkloadCluster {
  server: string
  /** An admin client (system:masters). */
  admin: KubeClient
  /** The agent's bearer token (user gpuhooks-workload-agent). */
  agentToken: string
  /** A client speaking as the kubelet of Node `name`: a certificate for system:node:<name> in system:nodes. */
  kubelet(name: string): Promise<KubeClient>
  /** A kubeconfig for the agent: server, CA data and token only, as the agent accepts. */
  agentKubeconfig(): string
  log: string
  /** Stops the API server (an outage); etcd keeps the data. */
  stop(): Promise<void>
  /** Starts it again on the same port and waits until it is ready. */
  start(): Promise<void>
  /** Closes the admin client's sockets. */
  close(): void
}

/** The user name of the agent's static token. */
export const AGENT_USER = 'gpuhooks-workload-agent'

/**
 * A kubeconfig of one cluster and one bearer token, with the CA as data: the only form the agent
 * accepts (no file paths, no exec).
 */
export function tokenKubeconfig(server: string, caPem: string | Buffer, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: cluster',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${Buffer.from(caPem).toString('base64')}`,
    'users:',
    '- name: user',
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: cluster',
    '  context: {cluster: cluster, user: user}',
    'current-context: cluster',
    ''
  ].join('\n')
}

/** The directory of the test binaries: $GPUHOOKS_K8S_BIN, else what build-binaries.sh prints last. */
export function binariesDir(): string {
  const fromEnv = process.env['GPUHOOKS_K8S_BIN']
  if (fromEnv !== undefined && existsSync(join(fromEnv, 'kube-apiserver'))) return fromEnv
  const script = fileURLToPath(new URL('../build-binaries.sh', import.meta.url))
  const result = spawnSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  const last = result.stdout.trim().split('\n').pop()?.trim()
  if (result.status !== 0 || last === undefined || last === '') throw new Error(`${script} failed (${String(result.status)})`)
  return last
}

/**
 * Starts the workload API server next to `cluster` and waits until it serves; with `scheduler`,
 * also a kube-scheduler of its own (admin credentials), which places Pods on the Node objects a
 * test writes and allocates their ResourceClaims from the ResourceSlices it writes.
 */
export async function startWorkloadCluster(
  cluster: TestCluster,
  binDir: string,
  options: { scheduler?: boolean } = {}
): Promise<WorkloadCluster> {
  const [port] = (await freePorts(1)) as [number]
  const server = `https://127.0.0.1:${port}`
  const dir = cluster.dir
  const agentToken = randomBytes(24).toString('hex')
  const tokenFile = join(dir, 'workload-tokens.csv')
  writeFileSync(tokenFile, `${agentToken},${AGENT_USER},${AGENT_USER}\n`)
  const log = join(dir, 'workload-apiserver.log')
  const pidFile = join(dir, 'pids')
  const file = (name: string): string => join(dir, name)
  const args = [
    `--etcd-servers=${cluster.etcdUrl}`,
    '--etcd-prefix=/workload',
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    '--advertise-address=127.0.0.1',
    '--endpoint-reconciler-type=none',
    '--service-cluster-ip-range=10.97.0.0/16',
    `--tls-cert-file=${file('apiserver.crt')}`,
    `--tls-private-key-file=${file('apiserver.key')}`,
    `--client-ca-file=${file('ca.crt')}`,
    `--token-auth-file=${tokenFile}`,
    '--service-account-issuer=https://workload.cluster.local',
    `--service-account-key-file=${file('sa.pub')}`,
    `--service-account-signing-key-file=${file('sa.key')}`,
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    // No controller manager creates the default ServiceAccount the test's Pods would need.
    '--disable-admission-plugins=ServiceAccount',
    '--enable-priority-and-fairness=false',
    '--profiling=false'
  ]
  const ca = readFileSync(file('ca.crt'))
  const adminConnection: KubeConnection = { server, ca, cert: readFileSync(file('admin.crt')), key: readFileSync(file('admin.key')) }
  const admin = new KubeClient(adminConnection)
  let proc: ManagedProcess | undefined

  const start = async (): Promise<void> => {
    proc = startProcess('workload-apiserver', join(binDir, 'kube-apiserver'), args, log, pidFile)
    const deadline = Date.now() + 120_000
    for (;;) {
      if (proc.child.exitCode !== null) throw new Error(`the workload API server exited:\n${tailLog(log)}`)
      try {
        await admin.request('GET', '/readyz')
        // The agent's Leases namespace is made by the API server itself; wait for it too.
        await admin.get({ apiVersion: 'v1', resource: 'namespaces', name: 'kube-node-lease' })
        return
      } catch {
        if (Date.now() > deadline) throw new Error(`the workload API server did not become ready:\n${tailLog(log)}`)
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
    }
  }
  await start()
  let scheduler: ManagedProcess | undefined
  if (options.scheduler === true) {
    const kubeconfig = file('workload-scheduler.kubeconfig')
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: w, cluster: {server: '${server}', certificate-authority: '${file('ca.crt')}'}}]`,
        `users: [{name: w, user: {client-certificate: '${file('admin.crt')}', client-key: '${file('admin.key')}'}}]`,
        'contexts: [{name: w, context: {cluster: w, user: w}}]',
        'current-context: w',
        ''
      ].join('\n')
    )
    scheduler = startProcess(
      'workload-scheduler',
      join(binDir, 'kube-scheduler'),
      [`--kubeconfig=${kubeconfig}`, '--leader-elect=false', '--secure-port=0', '--profiling=false'],
      file('workload-scheduler.log'),
      pidFile
    )
  }
  return {
    server,
    admin,
    agentToken,
    log,
    agentKubeconfig: () => tokenKubeconfig(server, ca, agentToken),
    async kubelet(name) {
      const files = await makeClientCert(dir, `kubelet-${name}`, `/O=system:nodes/CN=system:node:${name}`)
      return new KubeClient({ server, ca, cert: readFileSync(files.cert), key: readFileSync(files.key) })
    },
    async stop() {
      if (scheduler !== undefined) await stopProcess(scheduler)
      scheduler = undefined
      if (proc !== undefined) await stopProcess(proc)
    },
    start,
    close: () => admin.close()
  }
}
