/**
 * The host side of a real node (node.ts): what the node changes on this machine and how all of it
 * is taken back. A node owns, while it runs: a veth pair with the node's address and the outside
 * client's namespace, the routes of the Service range, the Pods' bridge and their network namespaces, iptables chains and ipsets
 * (kube-proxy's, kube-router's, kubelet's), mounts under its directory, cgroups under its cgroup
 * root and the IPv4 forwarding switch. node-watchdog.sh does the same from the node's records
 * when the test process dies without stopping its node.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runCommand, type CommandResult } from './cluster.ts'

/** The addresses and names of the one node a machine runs at a time. */
export const NODE_NET = {
  /** The node's address, on the host end of the veth pair to the outside namespace. */
  address: '10.245.0.1',
  device: 'gph-node0',
  bridge: 'gph-br0',
  podCidr: '10.244.0.0/24',
  clusterPodCidr: '10.244.0.0/16',
  /** The cluster's Service range (cluster.ts): routed onto the node's link, where unmatched packets end. */
  serviceCidr: '10.96.0.0/16',
  /** The cluster DNS Service address kubelet gives Pods. */
  dnsAddress: '10.96.0.10',
  /**
   * A client outside every pod CIDR: a network namespace at the other end of the node's link, with
   * routes to the node's address and the pod range only.
   */
  outside: { netns: 'gph-outside', hostAddress: '10.245.1.1', address: '10.245.1.2' }
} as const

const FORWARDING = '/proc/sys/net/ipv4/ip_forward'
/** kube-router's ipsets (`KUBE-SRC-...`, `KUBE-DST-...`, `kube-router-...`). */
const KUBE_ROUTER_SET = /^(KUBE-|kube-router)/i
const NODE_LINKS = [NODE_NET.bridge, NODE_NET.device] as const

/** Runs a command and rejects with its stderr when it fails. */
export async function sh(command: string, args: string[], input?: string): Promise<CommandResult> {
  const result = await runCommand(command, args, { input })
  if (result.code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${result.code}: ${result.stderr.trim()}`)
  return result
}

/** Runs a command whose failure is expected when there is nothing to undo. */
const quietly = (command: string, args: string[]): Promise<CommandResult> => runCommand(command, args)

/** What the host looked like before the node, to put back and to tell the node's netns apart. */
export interface HostBaseline {
  forwarding: string
  netns: Set<string>
  /** Of {@link HOST_DIRS}, those that did not exist: the node's stop removes them. */
  newDirs: string[]
}

/**
 * Directories kubelet and containerd's CNI library write whatever their configured roots: the
 * device plugin socket directory (a constant of kubelet's device manager) and libcni's result cache.
 */
const HOST_DIRS = ['/var/lib/kubelet', '/var/lib/cni'] as const

/** Network namespaces by name (`ip netns`), where containerd's CRI plugin makes the Pods' (`cni-...`). */
export function listNetns(): Set<string> {
  return new Set(existsSync('/run/netns') ? readdirSync('/run/netns') : [])
}

/**
 * Gives the machine the node's network. This kernel has no dummy device type (`ip link add ... type
 * dummy`: "Unknown device type"), so the node's address sits on the host end of a veth pair whose
 * other end is the outside client's namespace: the outside client reaches the node as a machine
 * on the node's network would. The Service range and the cluster pod range are routed onto that
 * link too, where nothing answers for them: a packet to a Service address kube-proxy has not (yet)
 * translated ends there instead of leaving the machine by the default route.
 */
export async function setUpHostNetwork(dir: string): Promise<HostBaseline> {
  const baseline = {
    forwarding: readFileSync(FORWARDING, 'utf8').trim(),
    netns: listNetns(),
    newDirs: HOST_DIRS.filter((d) => !existsSync(d))
  }
  // The records node-watchdog.sh restores from.
  writeFileSync(join(dir, 'ip_forward-before'), `${baseline.forwarding}\n`)
  writeFileSync(join(dir, 'netns-before'), [...baseline.netns, ''].join('\n'))
  writeFileSync(join(dir, 'new-dirs'), [...baseline.newDirs, ''].join('\n'))
  const { netns, hostAddress, address } = NODE_NET.outside
  const inside = (...args: string[]): Promise<CommandResult> => sh('ip', ['netns', 'exec', netns, 'ip', ...args])
  await sh('ip', ['netns', 'add', netns])
  await sh('ip', ['link', 'add', NODE_NET.device, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns])
  await sh('ip', ['addr', 'add', `${NODE_NET.address}/32`, 'dev', NODE_NET.device])
  await sh('ip', ['addr', 'add', `${hostAddress}/30`, 'dev', NODE_NET.device])
  await sh('ip', ['link', 'set', NODE_NET.device, 'up'])
  await sh('ip', ['route', 'add', NODE_NET.serviceCidr, 'dev', NODE_NET.device])
  // The pod range beyond this node's bridge (the cluster CIDR) ends there too.
  await sh('ip', ['route', 'add', NODE_NET.clusterPodCidr, 'dev', NODE_NET.device, 'metric', '4000'])
  await inside('addr', 'add', `${address}/30`, 'dev', 'eth0')
  await inside('link', 'set', 'eth0', 'up')
  await inside('link', 'set', 'lo', 'up')
  for (const cidr of [`${NODE_NET.address}/32`, NODE_NET.clusterPodCidr]) await inside('route', 'add', cidr, 'via', hostAddress)
  return baseline
}

/**
 * Takes back what a node left on the host network: the Pods' network namespaces made since
 * `baseline`, the bridge, the node's link and its routes, the outside namespace, the iptables
 * rules and ipsets of kube-proxy (`--cleanup`), kube-router (`--cleanup-config`) and kubelet, and
 * the forwarding switch. Each step runs even when an earlier one fails; the errors are returned.
 */
export async function tearDownHostNetwork(binDir: string, kubeRouter: string, baseline: HostBaseline | undefined): Promise<string[]> {
  const errors: string[] = []
  const step = async (what: string, action: () => Promise<unknown>): Promise<void> => {
    try {
      await action()
    } catch (error) {
      errors.push(`${what}: ${(error as Error).message}`)
    }
  }
  if (baseline !== undefined) {
    for (const ns of listNetns()) {
      if (!baseline.netns.has(ns) && ns.startsWith('cni-')) await step(`netns ${ns}`, () => sh('ip', ['netns', 'delete', ns]))
    }
  }
  if (listNetns().has(NODE_NET.outside.netns)) {
    // A process a test started there would keep the namespace, and the node's link, alive.
    const { stdout } = await quietly('ip', ['netns', 'pids', NODE_NET.outside.netns])
    for (const pid of stdout.split('\n').filter((p) => /^\d+$/.test(p))) await quietly('kill', ['-KILL', pid])
    await step('the outside netns', () => sh('ip', ['netns', 'delete', NODE_NET.outside.netns]))
  }
  for (const link of NODE_LINKS) {
    // The node's link goes with the outside namespace (a veth pair), maybe a moment later.
    const deleted = await quietly('ip', ['link', 'delete', link])
    if (deleted.code !== 0 && !/Cannot find device/.test(deleted.stderr)) errors.push(`link ${link}: ${deleted.stderr.trim()}`)
  }
  await step('kube-proxy --cleanup', () => sh(join(binDir, 'kube-proxy'), ['--cleanup']))
  if (existsSync(kubeRouter)) await step('kube-router --cleanup-config', () => cleanUpKubeRouter(kubeRouter))
  for (const family of ['iptables', 'ip6tables'] as const) await step(`${family} KUBE- chains`, () => removeKubeChains(family))
  // kube-router's cleanup cannot destroy a set a rule still named; with the rules gone, they go.
  const { stdout: sets } = await quietly('ipset', ['list', '-n'])
  for (const set of sets.split('\n').filter((name) => KUBE_ROUTER_SET.test(name)))
    await step(`ipset ${set}`, () => sh('ipset', ['destroy', set]))
  if (baseline !== undefined) {
    await step('ip_forward', async () => writeFileSync(FORWARDING, `${baseline.forwarding}\n`))
    for (const d of baseline.newDirs) await step(d, async () => rmSync(d, { recursive: true, force: true }))
  }
  return errors
}

/**
 * kube-router's own cleanup. v2.1.0 cleans its NetworkPolicy rules and ipsets first, then panics
 * (a nil pointer in the service proxy's hairpin cleanup, which firewall-only mode never set up):
 * the firewall's success line is what counts, and hostLeftovers checks the result.
 */
async function cleanUpKubeRouter(kubeRouter: string): Promise<void> {
  const result = await quietly(kubeRouter, ['--cleanup-config'])
  const output = result.stdout + result.stderr
  if (!/Successfully cleaned the NetworkPolicyController configurations/.test(output)) {
    throw new Error(`exited with ${result.code} without cleaning its firewall: ${output.trim().split('\n').slice(-5).join(' | ')}`)
  }
}

/**
 * Removes every `KUBE-` chain of every table, with the rules of other chains that jump to it, in
 * one iptables-restore per table. What the components' own cleanups leave: kubelet's
 * KUBE-FIREWALL and canaries (kubelet has no cleanup), and kube-router's top chains, which
 * `--cleanup-config` reports cleaned but leaves. No other program on these machines makes KUBE-
 * chains, and the node lock makes this node the only one.
 */
async function removeKubeChains(family: 'iptables' | 'ip6tables'): Promise<void> {
  const { stdout } = await sh(`${family}-save`, [])
  let table = ''
  const script = new Map<string, { rules: string[]; chains: string[] }>()
  for (const line of stdout.split('\n')) {
    if (line.startsWith('*')) table = line.slice(1)
    const entry = script.get(table) ?? { rules: [], chains: [] }
    script.set(table, entry)
    if (line.startsWith(':KUBE-')) entry.chains.push(line.slice(1).split(' ')[0] ?? '')
    else if (line.startsWith('-A ') && !line.startsWith('-A KUBE-') && / -j KUBE-/.test(line)) entry.rules.push(`-D ${line.slice(3)}`)
  }
  for (const [name, { rules, chains }] of script) {
    if (chains.length === 0) continue
    const lines = [`*${name}`, ...rules, ...chains.map((c) => `-F ${c}`), ...chains.map((c) => `-X ${c}`), 'COMMIT', '']
    await sh(`${family}-restore`, ['--noflush'], lines.join('\n'))
  }
}

/** Makes `root` in every cgroup v1 hierarchy (kubelet's cgroupRoot must exist), cpuset's with its parent's CPUs and memory nodes. */
export function makeCgroups(root: string): void {
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    if (hierarchy === 'unified') continue
    const dir = join('/sys/fs/cgroup', hierarchy, root)
    if (!existsSync(dir)) mkdirSync(dir)
    if (hierarchy === 'cpuset') {
      for (const file of ['cpuset.cpus', 'cpuset.mems'])
        writeFileSync(join(dir, file), readFileSync(join('/sys/fs/cgroup', hierarchy, file)))
    }
  }
}

/** Every mount point under `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const prefix = `${dir}/`
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .map((path) => path.replace(/\\040/g, ' '))
    .filter((path) => path.startsWith(prefix))
    .sort((a, b) => b.length - a.length)
}

/** Unmounts everything under `dir` (lazily where a mount is still busy). */
export async function unmountUnder(dir: string): Promise<string[]> {
  const errors: string[] = []
  for (const path of mountsUnder(dir)) {
    const result = await quietly('umount', [path])
    if (result.code !== 0) {
      const lazy = await quietly('umount', ['-l', path])
      if (lazy.code !== 0) errors.push(`umount ${path}: ${lazy.stderr.trim()}`)
    }
  }
  return errors
}

/** Removes the cgroups kubelet and runc made under `root` in every mounted hierarchy, deepest first. */
export function removeCgroups(root: string): string[] {
  const errors: string[] = []
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    const top = join('/sys/fs/cgroup', hierarchy, root)
    if (!existsSync(top)) continue
    const dirs: string[] = []
    const walk = (dir: string): void => {
      dirs.push(dir)
      for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) walk(join(dir, entry.name))
    }
    walk(top)
    for (const dir of dirs.sort((a, b) => b.length - a.length)) {
      try {
        rmdirSync(dir)
      } catch (error) {
        errors.push(`rmdir ${dir}: ${(error as Error).message}`)
      }
    }
  }
  return errors
}

/**
 * What of a node is still on the host: links, the node's netns, iptables chains and ipsets of the
 * node's components, mounts under its directory, cgroups under its root. Empty when all is clean.
 */
export async function hostLeftovers(dir: string, cgroupRoot: string, baseline: HostBaseline): Promise<string[]> {
  const left: string[] = []
  for (const link of NODE_LINKS) if (existsSync(`/sys/class/net/${link}`)) left.push(`link ${link}`)
  if (listNetns().has(NODE_NET.outside.netns)) left.push(`netns ${NODE_NET.outside.netns}`)
  for (const ns of listNetns()) if (!baseline.netns.has(ns) && ns.startsWith('cni-')) left.push(`netns ${ns}`)
  for (const tool of ['iptables-save', 'ip6tables-save']) {
    const { stdout } = await sh(tool, [])
    for (const line of stdout.split('\n')) if (/^:KUBE-/.test(line)) left.push(`${tool}: chain ${line.slice(1).split(' ')[0]}`)
  }
  const { stdout: sets } = await sh('ipset', ['list', '-n'])
  for (const set of sets.split('\n')) if (KUBE_ROUTER_SET.test(set)) left.push(`ipset ${set}`)
  for (const mount of mountsUnder(dir)) left.push(`mount ${mount}`)
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    if (existsSync(join('/sys/fs/cgroup', hierarchy, cgroupRoot))) left.push(`cgroup ${hierarchy}${cgroupRoot}`)
  }
  if (readFileSync(FORWARDING, 'utf8').trim() !== baseline.forwarding) left.push('ip_forward changed')
  for (const d of baseline.newDirs) if (existsSync(d)) left.push(`directory ${d}`)
  return left
}
