/**
 * podman as the image tests and the image build use it: a configuration and a storage of their
 * own, so nothing under /etc/containers or /var/lib/containers is read or written, and every
 * caller (this layer, the real-node tests, a shell) gets the same store by taking the environment
 * from {@link containersEnv}.
 *
 * Why each setting (facts of the development and CI machines, found while building):
 * - `runtime = "runc"`: crun refuses the hosts' hybrid cgroup v1/v2 mounts; runc works with the
 *   `cgroupfs` manager (there is no systemd to ask for cgroups).
 * - `default_ulimits`: the sandbox lacks CAP_SYS_RESOURCE, so podman's defaults (higher than the
 *   host's limits) fail to apply; 4096 is under the host's nofile 20000.
 * - `events_logger = "file"`: there is no journald.
 * - a bridge network of its own ({@link TEST_NETWORK}, {@link TEST_SUBNET}), so the tests reach a
 *   Pod's address directly and share no address range with podman's default network or the
 *   other test layers' bridges.
 * - storage under `~/.cache/gpuhooks/containers` (or `$GPUHOOKS_CONTAINERS_DIR`): the images are
 *   cached there by content across runs and worktrees, as the cluster binaries are.
 */
import { execFile, spawn, type SpawnOptions } from 'node:child_process'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

/** The directory that holds the configuration, the storage and the downloads. */
export const CONTAINERS_DIR = process.env['GPUHOOKS_CONTAINERS_DIR'] ?? join(homedir(), '.cache', 'gpuhooks', 'containers')

function containersConf(dir: string): string {
  return `# Written by tests/images/support/podman.ts: podman for the gpuhooks image tests only.
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "${join(dir, 'events.log')}"
tmp_dir = "${join(dir, 'tmp')}"

[network]
network_config_dir = "${join(dir, 'networks')}"
`
}

function storageConf(dir: string): string {
  return `# Written by tests/images/support/podman.ts: the store of the gpuhooks images.
[storage]
driver = "overlay"
graphroot = "${join(dir, 'storage')}"
runroot = "${join(dir, 'run')}"
`
}

/** Writes `text` to `file` unless it holds it already (so concurrent callers never see a half file). */
function ensureFile(file: string, text: string): void {
  try {
    if (readFileSync(file, 'utf8') === text) return
  } catch {
    // absent: written below
  }
  const partial = `${file}.${process.pid}`
  writeFileSync(partial, text)
  // rename(2) replaces atomically.
  renameSync(partial, file)
}

/**
 * The environment podman needs here: the process's own plus `CONTAINERS_CONF` and
 * `CONTAINERS_STORAGE_CONF` pointing at this layer's files (written on first use).
 */
export function containersEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  mkdirSync(CONTAINERS_DIR, { recursive: true })
  const conf = join(CONTAINERS_DIR, 'containers.conf')
  const storage = join(CONTAINERS_DIR, 'storage.conf')
  ensureFile(conf, containersConf(CONTAINERS_DIR))
  ensureFile(storage, storageConf(CONTAINERS_DIR))
  return { ...base, CONTAINERS_CONF: conf, CONTAINERS_STORAGE_CONF: storage }
}

/** A failed command, with what it printed. */
export class CommandError extends Error {
  constructor(
    readonly argv: string[],
    readonly code: number | null,
    readonly stdout: string,
    readonly stderr: string
  ) {
    super(`${argv.join(' ')} exited with ${code}: ${stderr.trim().slice(-4000) || stdout.trim().slice(-4000)}`)
  }
}

/** Runs `podman args` to completion and returns its stdout; a non-zero exit throws {@link CommandError}. */
export function podman(args: string[], options: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  return run('podman', args, options)
}

/** Runs a command to completion with podman's environment; stdout is returned, a failure throws. */
export function run(command: string, args: string[], options: { input?: string; timeoutMs?: number; cwd?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      args,
      { env: containersEnv(), maxBuffer: 256 << 20, timeout: options.timeoutMs ?? 0, cwd: options.cwd },
      (error, stdout, stderr) => {
        if (error === null) resolve(stdout)
        else reject(new CommandError([command, ...args], typeof error.code === 'number' ? error.code : null, stdout, stderr))
      }
    )
    if (options.input !== undefined) child.stdin?.end(options.input)
  })
}

/**
 * Runs a long command (a build) with its output going to this process's stderr, so that a
 * caller's stdout stays clean; resolves when it exits 0.
 */
export function runLogged(command: string, args: string[], options: SpawnOptions = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: containersEnv(), stdio: ['ignore', process.stderr, process.stderr], ...options })
    child.once('error', reject)
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new CommandError([command, ...args], code, '', `see the output above (exit ${code})`))
    )
  })
}

/** True when the store holds an image of that reference. */
export async function imageExists(ref: string): Promise<boolean> {
  try {
    await podman(['image', 'exists', ref])
    return true
  } catch (error) {
    if (error instanceof CommandError && error.code === 1) return false
    throw error
  }
}

/** The bridge network the image tests' Pods join, and its subnet. */
export const TEST_NETWORK = 'gpuhooks-test'
export const TEST_SUBNET = '10.213.0.0/24'

/** Creates {@link TEST_NETWORK} unless it exists (two callers at once: the loser finds it made). */
export async function ensureNetwork(): Promise<string> {
  try {
    await podman(['network', 'exists', TEST_NETWORK])
    return TEST_NETWORK
  } catch {
    // absent: made below
  }
  try {
    // Not --internal: an internal network's bridge has no address, so the host has no route to
    // the Pods and their addresses would go out by the default route.
    await podman(['network', 'create', '--subnet', TEST_SUBNET, '--disable-dns', TEST_NETWORK])
  } catch (error) {
    await podman(['network', 'exists', TEST_NETWORK]).catch(() => {
      throw error
    })
  }
  return TEST_NETWORK
}

/**
 * Throws unless the host reaches `address` directly on a bridge (no gateway): the tests send
 * traffic only to their own bridges, never out by a default route.
 */
export async function assertOnBridge(address: string): Promise<void> {
  const route = await run('ip', ['route', 'get', address])
  if (/ via /.test(route) || !/ dev podman\d+ /.test(route))
    throw new Error(`${address} is not on a podman bridge of this host: ${route.trim()}`)
}
