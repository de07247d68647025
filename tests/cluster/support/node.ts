/**
 * A real node for the cluster tests: containerd (Debian's 1.6, runc), kubelet, kube-proxy and
 * kube-scheduler built from the control plane's module, kube-router as the NetworkPolicy
 * firewall, and Debian's CNI bridge plugin, on a test cluster whose API server binds the node's
 * address (cluster.ts `nodeAddress`). The node's address lives on a veth device the harness
 * makes; Pods hang off a bridge; nothing the node does reaches beyond this machine. No GPU: the
 * accelerator resources are advertised as extended resources on the Node's status, so the
 * scheduler places Instance Pods that request them.
 *
 * A node may also run Kubernetes' own DRA test driver (`test/e2e/dra/test-driver`, built with the
 * node's programs) as its kubelet plugin ({@link NodeOptions.dra}): it publishes the node's
 * ResourceSlice of named devices, and kubelet calls it to prepare and unprepare each claim a Pod
 * on the node uses, writing and removing a CDI spec per claim.
 *
 * One node per machine at a time (a lock), brought up once per test file; {@link RealNode.stop}
 * takes everything back, and node-watchdog.sh does so when the test process dies first.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePorts } from '../../support/ports.ts'
import { runCommand, type TestCluster } from './cluster.ts'
import { CGROUP_ROOT, cniConflist, containerdConfig, kubeletConfig, kubeProxyConfig, nodePaths, type NodeLayout } from './node-config.ts'
import {
  hostLeftovers,
  makeCgroups,
  NODE_NET,
  removeCgroups,
  setUpHostNetwork,
  sh,
  tearDownHostNetwork,
  unmountUnder,
  type HostBaseline
} from './node-host.ts'
import { writeOciArchive } from './oci.ts'
import { startProcess, stopProcess, tailLog, type ManagedProcess } from './processes.ts'

/** The Node's name. */
export const NODE_NAME = 'gpuhooks-node'
/** The pause image every Pod sandbox runs: Debian's static catatonit, alone in an image. */
export const PAUSE_IMAGE = 'localhost/gpuhooks/pause:catatonit'
/** What the node advertises besides cpu and memory, as a HAMi-managed GPU node would. */
export const NODE_EXTENDED_RESOURCES: Readonly<Record<string, string>> = {
  'nvidia.com/gpu': '8',
  'nvidia.com/gpucores': '800',
  'nvidia.com/gpumem': '655360',
  'nvidia.com/gpumem-percentage': '800'
}
/** The labels the node registers with (the test InstanceTypes select `gpu: on`). */
export const NODE_LABELS = { gpu: 'on' } as const

const HERE = fileURLToPath(new URL('.', import.meta.url))
const K8S_BUILD = join(HERE, '..', 'build-binaries.sh')
const TOOLS_BUILD = join(HERE, '..', 'build-node-tools.sh')
const WATCHDOG = join(HERE, 'node-watchdog.sh')
const NODE_BINARIES = ['kubelet', 'kube-proxy', 'kube-scheduler'] as const
/** Kubernetes' DRA test driver, built by build-binaries.sh beside the node's programs. */
const DRA_TEST_DRIVER = 'dra-test-driver'

/** What a node runs besides its usual programs. */
export interface NodeOptions {
  /**
   * The DRA test driver as the node's kubelet plugin: `driverName` is the driver its
   * ResourceSlice and claims name, `devices` how many devices (`device-00`, …) it publishes.
   */
  dra?: { driverName: string; devices: number }
}

/** The host side prepared before the cluster starts (the API server binds the node's address). */
export interface PreparedNode {
  dir: string
  binDir: string
  kubeRouter: string
  baseline: HostBaseline
  /** node-watchdog.sh under flock: holds the lock, cleans up if this process dies first. */
  watchdog: ChildProcess
  /** Undoes the host side and releases the lock; for a start that fails before a node exists. */
  abandon(): Promise<void>
}

/** A running node. */
export interface RealNode {
  name: string
  /** The node's address: kubelet, node ports, `status.accessAddresses`. */
  address: string
  podCidr: string
  dir: string
  logs: Record<'containerd' | 'kubelet' | 'kubeProxy' | 'kubeRouter' | 'scheduler' | 'draPlugin', string>
  /** Where the DRA test driver writes a CDI spec per prepared claim (with {@link NodeOptions.dra}). */
  cdiDir: string
  /** Imports an OCI or docker archive into the node's containerd, where kubelet finds it. */
  importImage(archive: string): Promise<void>
  /** Stops the node and takes back everything it made; idempotent. Returns what it could not undo. */
  stop(): Promise<string[]>
  /** What of the node is still on the host (after stop: nothing). */
  leftovers(): Promise<string[]>
}

/** Prints progress of a build script on stderr and returns its last stdout line. */
async function build(script: string): Promise<string> {
  const result = await runCommand('bash', [script], { stderr: 'inherit' })
  const last = result.stdout.trim().split('\n').pop()?.trim() ?? ''
  if (result.code !== 0 || last === '') throw new Error(`${script} failed with exit code ${result.code}; see its output above`)
  return last
}

/**
 * Takes the machine's node lock (waiting for another node test file), builds or finds the node's
 * programs, and gives the host the node's address. Call before {@link startCluster} with
 * `nodeAddress: NODE_NET.address`.
 */
export async function prepareNode(): Promise<PreparedNode> {
  const binDir = await build(K8S_BUILD)
  const missing = NODE_BINARIES.filter((name) => !existsSync(join(binDir, name)))
  if (missing.length > 0) throw new Error(`${binDir} lacks ${missing.join(', ')}; run ${K8S_BUILD}`)
  const kubeRouter = join(await build(TOOLS_BUILD), 'kube-router')
  const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-node-'))
  const watchdog = await startLockingWatchdog(dir, binDir, kubeRouter)
  // What an earlier node left, should its watchdog have been killed too.
  await tearDownHostNetwork(binDir, kubeRouter, undefined)
  let baseline: HostBaseline
  try {
    baseline = await setUpHostNetwork(dir)
  } catch (error) {
    await tearDownHostNetwork(binDir, kubeRouter, undefined)
    watchdog.kill('SIGKILL')
    throw error
  }
  const abandon = async (): Promise<void> => {
    await tearDownHostNetwork(binDir, kubeRouter, baseline)
    await runCommand('rm', ['-rf', dir])
    watchdog.kill('SIGKILL')
  }
  return { dir, binDir, kubeRouter, baseline, abandon, watchdog }
}

/** Starts node-watchdog.sh under flock and resolves once it holds the lock. */
async function startLockingWatchdog(dir: string, binDir: string, kubeRouter: string): Promise<ChildProcess> {
  const args = [
    WATCHDOG,
    String(process.pid),
    dir,
    binDir,
    kubeRouter,
    NODE_NET.bridge,
    NODE_NET.device,
    CGROUP_ROOT,
    NODE_NET.outside.netns
  ]
  const child = spawn('flock', ['/run/lock/gpuhooks-node.lock', 'sh', ...args], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] })
  await new Promise<void>((resolve, reject) => {
    child.once('error', (error) => reject(new Error(`flock could not be run: ${error.message}`)))
    child.once('exit', (code) => reject(new Error(`the node watchdog exited with ${code} before taking the lock`)))
    child.stdout?.once('data', () => resolve())
  })
  child.removeAllListeners('exit')
  child.stdout?.destroy()
  child.unref()
  return child
}

/**
 * Starts containerd, kubelet, kube-proxy, kube-router and kube-scheduler for `cluster` and
 * resolves once the Node is Ready, untainted, with its pod CIDR and extended resources.
 */
export async function startNode(cluster: TestCluster, prepared: PreparedNode, options: NodeOptions = {}): Promise<RealNode> {
  const { dir, binDir, kubeRouter, baseline, watchdog } = prepared
  const paths = nodePaths(dir)
  const pidFile = join(dir, 'pids')
  const processes: ManagedProcess[] = []
  const [kubeletPort, kubeProxyHealthPort, kubeProxyMetricsPort] = (await freePorts(3)) as [number, number, number]
  const layout: NodeLayout = {
    dir,
    name: NODE_NAME,
    address: NODE_NET.address,
    bridge: NODE_NET.bridge,
    podCidr: NODE_NET.podCidr,
    clusterPodCidr: NODE_NET.clusterPodCidr,
    dnsAddress: NODE_NET.dnsAddress,
    pauseImage: PAUSE_IMAGE,
    caCert: join(cluster.dir, 'ca.crt'),
    kubeconfig: cluster.kubeconfig,
    kubeletPort,
    kubeProxyHealthPort,
    kubeProxyMetricsPort
  }
  const logs = {
    containerd: join(dir, 'containerd.log'),
    kubelet: join(dir, 'kubelet.log'),
    kubeProxy: join(dir, 'kube-proxy.log'),
    kubeRouter: join(dir, 'kube-router.log'),
    scheduler: join(dir, 'kube-scheduler.log'),
    draPlugin: join(dir, 'dra-plugin.log')
  }
  const cdiDir = join(dir, 'cdi')
  const start = (name: string, command: string, args: string[], logFile: string): ManagedProcess => {
    const proc = startProcess(name, command, args, logFile, pidFile)
    processes.push(proc)
    return proc
  }
  const ctr = (args: string[]): Promise<unknown> => sh('ctr', ['--address', paths.containerdSocket, '--namespace', 'k8s.io', ...args])

  let stopped: Promise<string[]> | undefined
  const stop = (): Promise<string[]> => (stopped ??= stopNode())
  const stopNode = async (): Promise<string[]> => {
    const errors: string[] = []
    const scheduler = processes.find((p) => p.name === 'kube-scheduler')
    if (scheduler !== undefined) await stopProcess(scheduler)
    errors.push(...(await removePods(cluster, logs.kubelet)))
    for (const proc of [...processes].reverse()) await stopProcess(proc)
    await killContainers(paths.containerdState)
    errors.push(...(await unmountUnder(dir)))
    errors.push(...(await tearDownHostNetwork(binDir, kubeRouter, baseline)))
    errors.push(...removeCgroups(CGROUP_ROOT))
    const left = await hostLeftovers(dir, CGROUP_ROOT, baseline)
    if (left.length === 0) await runCommand('rm', ['-rf', dir])
    else errors.push(`left on the host (the directory ${dir} is kept): ${left.join('; ')}`)
    watchdog.kill('SIGKILL')
    return errors
  }

  try {
    for (const d of [paths.cniConfDir, paths.cniIpamDir, paths.kubeletRoot, paths.podLogs, paths.volumePlugins])
      mkdirSync(d, { recursive: true })
    writeFileSync(paths.containerdConfig, containerdConfig(layout))
    writeFileSync(join(paths.cniConfDir, '10-gpuhooks.conflist'), cniConflist(layout))
    writeFileSync(paths.kubeletConfig, kubeletConfig(layout))
    writeFileSync(paths.kubeProxyConfig, kubeProxyConfig(layout))
    // Pods resolve through the cluster DNS address only; the machine's resolvers stay out of it.
    writeFileSync(paths.resolvConf, `nameserver ${NODE_NET.dnsAddress}\n`)

    makeCgroups(CGROUP_ROOT)
    const containerd = start('containerd', 'containerd', ['--config', paths.containerdConfig], logs.containerd)
    await waitUntil(
      'containerd to answer',
      containerd,
      60_000,
      async () => (await runCommand('ctr', ['--address', paths.containerdSocket, 'version'])).code === 0
    )
    const pause = await writeOciArchive(
      { ref: PAUSE_IMAGE, files: { '/usr/bin/catatonit': '/catatonit' }, entrypoint: ['/catatonit', '-P'] },
      join(dir, 'pause.tar')
    )
    await ctr(['images', 'import', pause])

    const kubelet = start(
      'kubelet',
      join(binDir, 'kubelet'),
      [
        `--config=${paths.kubeletConfig}`,
        `--kubeconfig=${cluster.kubeconfig}`,
        `--root-dir=${paths.kubeletRoot}`,
        `--cert-dir=${join(paths.kubeletRoot, 'pki')}`,
        `--hostname-override=${NODE_NAME}`,
        `--node-ip=${NODE_NET.address}`,
        `--node-labels=${Object.entries(NODE_LABELS)
          .map(([k, v]) => `${k}=${v}`)
          .join(',')}`
      ],
      logs.kubelet
    )
    await waitUntil('the Node to register', kubelet, 120_000, async () => (await nodeJson(cluster)) !== undefined)
    // The pod CIDR a node IPAM controller would assign; kube-router and the isolation Setting read it.
    await cluster.kubectl([
      'patch',
      'node',
      NODE_NAME,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { podCIDR: NODE_NET.podCidr, podCIDRs: [NODE_NET.podCidr] } })
    ])
    await advertiseExtendedResources(cluster)
    if (options.dra !== undefined) {
      // After the Node exists: the driver's ResourceSlice names it. kubelet finds the driver by
      // the registration socket it puts in kubelet's plugins_registry; the driver serves DRA on a
      // socket in kubelet's plugins directory, under its own name.
      const { driverName, devices } = options.dra
      // The driver makes the plugins directory but listens in its own subdirectory, which a
      // DaemonSet's volume would provide.
      mkdirSync(join(paths.kubeletRoot, 'plugins', driverName), { recursive: true })
      const plugin = start(
        'dra-plugin',
        join(binDir, DRA_TEST_DRIVER),
        [
          `--kubeconfig=${cluster.kubeconfig}`,
          `--drivername=${driverName}`,
          'kubelet-plugin',
          `--node-name=${NODE_NAME}`,
          `--num-devices=${devices}`,
          `--plugin-registration-path=${join(paths.kubeletRoot, 'plugins_registry')}`,
          `--datadir=${join(paths.kubeletRoot, 'plugins')}`,
          `--cdi-dir=${cdiDir}`
        ],
        logs.draPlugin
      )
      await waitUntil('the DRA test driver to publish the node’s devices', plugin, 60_000, async () => {
        const listed = await cluster.kubectl(['get', 'resourceslices', '-o', 'json'], { allowFail: true })
        if (listed.code !== 0) return false
        const slices = (JSON.parse(listed.stdout) as { items: { spec?: { driver?: string; nodeName?: string; devices?: unknown[] } }[] })
          .items
        return slices.some((s) => s.spec?.driver === driverName && s.spec.nodeName === NODE_NAME && s.spec.devices?.length === devices)
      })
    }

    start('kube-proxy', join(binDir, 'kube-proxy'), [`--config=${paths.kubeProxyConfig}`], logs.kubeProxy)
    start(
      'kube-router',
      kubeRouter,
      [
        `--kubeconfig=${cluster.kubeconfig}`,
        `--hostname-override=${NODE_NAME}`,
        '--run-firewall=true',
        '--run-router=false',
        '--run-service-proxy=false',
        '--enable-cni=false',
        '--enable-ipv6=false',
        `--service-cluster-ip-range=${NODE_NET.serviceCidr}`,
        '--service-node-port-range=30000-32767',
        '--health-port=0',
        '--metrics-port=0'
      ],
      logs.kubeRouter
    )
    start(
      'kube-scheduler',
      join(binDir, 'kube-scheduler'),
      [`--kubeconfig=${cluster.kubeconfig}`, '--leader-elect=false', '--secure-port=0'],
      logs.scheduler
    )

    await waitUntil('the Node to be Ready and untainted', kubelet, 120_000, async () => {
      const node = await nodeJson(cluster)
      const ready = node?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'
      const capacity = node?.status?.allocatable ?? {}
      const advertised = Object.entries(NODE_EXTENDED_RESOURCES).every(([k, v]) => capacity[k] === v)
      return ready && (node?.spec?.taints ?? []).length === 0 && advertised
    })
  } catch (error) {
    const tails = processes.map((p) => `--- ${p.name} (${p.logFile}):\n${tailLog(p.logFile, 15)}`).join('\n')
    const errors = await stop()
    throw new Error(`${(error as Error).message}\n${tails}${errors.length > 0 ? `\ncleanup: ${errors.join('; ')}` : ''}`)
  }

  return {
    name: NODE_NAME,
    address: NODE_NET.address,
    podCidr: NODE_NET.podCidr,
    dir,
    logs,
    cdiDir,
    importImage: async (archive) => void (await ctr(['images', 'import', archive])),
    stop,
    leftovers: () => hostLeftovers(dir, CGROUP_ROOT, baseline)
  }
}

interface NodeView {
  spec?: { taints?: unknown[] }
  status?: { conditions?: { type: string; status: string }[]; allocatable?: Record<string, string> }
}

async function nodeJson(cluster: TestCluster): Promise<NodeView | undefined> {
  const result = await cluster.kubectl(['get', 'node', NODE_NAME, '-o', 'json'], { allowFail: true })
  return result.code === 0 ? (JSON.parse(result.stdout) as NodeView) : undefined
}

/** The documented way to advertise a resource no device plugin manages: a patch of the Node's status capacity. */
async function advertiseExtendedResources(cluster: TestCluster): Promise<void> {
  const patch = Object.entries(NODE_EXTENDED_RESOURCES).map(([name, value]) => ({
    op: 'add',
    path: `/status/capacity/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`,
    value
  }))
  await cluster.kubectl(['patch', 'node', NODE_NAME, '--subresource=status', '--type=json', '-p', JSON.stringify(patch)])
}

/**
 * Deletes every Pod while kubelet still runs, so that it stops their sandboxes the proper way (the
 * CNI plugin releases each address and veth, containerd removes each network namespace).
 */
async function removePods(cluster: TestCluster, kubeletLog: string): Promise<string[]> {
  // Cordoned (and the scheduler stopped), the node takes no replacement a controller makes.
  const cordoned = await cluster.kubectl(['cordon', NODE_NAME], { allowFail: true })
  if (cordoned.code !== 0) return [`cordoning the node: ${cordoned.stderr.trim()}`]
  const onNode = `--field-selector=spec.nodeName=${NODE_NAME}`
  const deleted = await cluster.kubectl(['delete', 'pods', '--all-namespaces', onNode, '--grace-period=1', '--wait=false'], {
    allowFail: true
  })
  if (deleted.code !== 0) return [`deleting the Pods: ${deleted.stderr.trim()}`]
  const deadline = Date.now() + 90_000
  for (;;) {
    const left = await cluster.kubectl(['get', 'pods', '--all-namespaces', onNode, '-o', 'name'], { allowFail: true })
    if (left.code === 0 && left.stdout.trim() === '') return []
    if (Date.now() > deadline) return [`Pods still there after 90 s: ${left.stdout.trim()}; kubelet:\n${tailLog(kubeletLog, 10)}`]
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

/** Kills what containerd's shims still run (kubelet and containerd are stopped by now). */
async function killContainers(state: string): Promise<void> {
  const tasks = join(state, 'io.containerd.runtime.v2.task')
  if (!existsSync(tasks)) return
  await runCommand('sh', [
    '-c',
    'for f in "$1"/*/*/init.pid "$1"/*/*/shim.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done; sleep 1',
    'kill-containers',
    tasks
  ])
}

/** Polls `check` until it holds; rejects when `proc` exits first or after `timeoutMs`, with its log's tail. */
async function waitUntil(what: string, proc: ManagedProcess, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  let exited = false
  void proc.exited.then(() => (exited = true))
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (exited) throw new Error(`${proc.name} exited while waiting for ${what}; last lines of ${proc.logFile}:\n${tailLog(proc.logFile)}`)
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}
