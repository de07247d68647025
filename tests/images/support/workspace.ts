/**
 * The workspace images of the SSH tests (tests/images/workspace/Containerfile, targets `root` and
 * `user`), on the local Debian base, tagged by a hash of that directory and the base.
 */
import { join } from 'node:path'
import { contextHash, hashOf } from './context.ts'
import { ROOT, refOf, withLock } from './images.ts'
import { CONTAINERS_DIR, imageExists, runLogged } from './podman.ts'

/** A workspace image that runs as root, and the same one as uid 1000. */
export interface WorkspaceImages {
  root: string
  user: string
}

const CONTEXT = join(ROOT, 'tests', 'images', 'workspace')

/** Builds what is missing of the two workspace images on `debian` and returns their references. */
export async function buildWorkspaceImages(debian: string): Promise<WorkspaceImages> {
  const hash = hashOf('workspace', debian, contextHash(CONTEXT, undefined, 'tests/images/workspace'))
  const refs: WorkspaceImages = {
    root: refOf('gpuhooks-test/workspace', 'root-', hash),
    user: refOf('gpuhooks-test/workspace', 'user-', hash)
  }
  if ((await imageExists(refs.root)) && (await imageExists(refs.user))) return refs
  return withLock(
    join(CONTAINERS_DIR, 'build.lock'),
    (line) => process.stderr.write(`images: ${line}\n`),
    async () => {
      for (const target of ['root', 'user'] as const) {
        if (await imageExists(refs[target])) continue
        // apt-get inside the build reaches Debian's archive over HTTP.
        await runLogged('podman', [
          'build',
          '--pull=never',
          '--network=host',
          '--target',
          target,
          '--build-arg',
          `DEBIAN_IMAGE=${debian}`,
          '--tag',
          refs[target],
          CONTEXT
        ])
      }
      return refs
    }
  )
}
