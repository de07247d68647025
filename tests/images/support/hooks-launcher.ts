/**
 * The GPUHOOKS_SERVICE_LAUNCHER module of tests/support/service.ts for the image tests: the
 * process-contract tests start the service in the hook image instead of `npm start`. The podman
 * arguments come from the chart's hook container (GPUHOOKS_CONTAINER_RUN, JSON of a
 * kube-podman.ts `PodmanRun`: user, capabilities, read-only root, mounts, command), on the host
 * network (the tests connect to 127.0.0.1 ports they claimed), with the test's variables in place
 * of the chart's. A file a variable names (a TLS certificate) reaches the container as a Secret
 * volume would give it: a copy, mode 0644, at the same path. `podman run` passes signals to the
 * container's PID 1 (node) and exits with its status, as the test expects of the service.
 */
import { copyFileSync, chmodSync, mkdirSync, mkdtempSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { OWNED } from './containers.ts'
import type { PodmanRun } from './kube-podman.ts'
import { CONTAINERS_DIR } from './podman.ts'

export function serviceCommand(env: Record<string, string>): [string, string[]] {
  const text = process.env['GPUHOOKS_CONTAINER_RUN']
  if (text === undefined) throw new Error('GPUHOOKS_CONTAINER_RUN is not set')
  const run = JSON.parse(text) as PodmanRun
  const files = Object.values(env).filter((value) => {
    try {
      return value.startsWith('/') && statSync(value).isFile()
    } catch {
      return false
    }
  })
  const mounts: string[] = []
  if (files.length > 0) {
    mkdirSync(join(CONTAINERS_DIR, 'launch'), { recursive: true })
    const copies = mkdtempSync(join(CONTAINERS_DIR, 'launch', `${process.pid}-`))
    files.forEach((file, i) => {
      const copy = join(copies, String(i))
      copyFileSync(file, copy)
      chmodSync(copy, 0o644)
      mounts.push(`--mount=type=bind,source=${copy},destination=${file},ro`)
    })
  }
  const variables = Object.entries(env).map(([name, value]) => `--env=${name}=${value}`)
  return ['podman', ['run', '--rm', OWNED, '--network=host', ...run.flags, ...variables, ...mounts, run.image, ...run.args]]
}
