/**
 * The images the real-node scenarios run, built by `npm run images` (tests/images) and imported
 * into the node's containerd as OCI archives, as a cluster without a registry side-loads images.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { buildImages, saveImage, type ImageRefs } from '../../images/support/images.ts'
import type { RealNode } from './node.ts'

/**
 * Builds what is missing of the images (nothing, once built), imports the ones named into the
 * node, and returns every ref. The workloads run the `node` base (Debian and Node).
 */
export async function importImages(node: RealNode, which: readonly (keyof ImageRefs)[] = ['node']): Promise<ImageRefs> {
  const refs = await buildImages()
  const work = mkdtempSync(join(node.dir, 'images-'))
  try {
    for (const name of which) {
      const archive = join(work, `${name}.tar`)
      await saveImage(refs[name], archive)
      await node.importImage(archive)
      rmSync(archive)
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  return refs
}
