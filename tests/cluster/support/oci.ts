/**
 * Single-layer OCI image archives made from files of this machine, without a container engine or
 * a registry: the layer is a tar of the given files, and the archive is an OCI image layout
 * (`oci-layout`, `index.json`, `blobs/sha256/...`) in one tar, as `ctr images import` reads it.
 * The real node's pause image is made this way (Debian's static `catatonit` in an otherwise empty
 * image), and so is any small test image whose program is a static binary.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** What goes into an image made by {@link writeOciArchive}. */
export interface OciImage {
  /** The image's name, a full reference with a registry part (`localhost/gpuhooks/pause:catatonit`). */
  ref: string
  /** Host file → path inside the image (absolute). The mode of the host file is kept. */
  files: Record<string, string>
  entrypoint: string[]
  cmd?: string[]
  /** `uid:gid` the image runs as; absent means root. */
  user?: string
}

/** The media types of an OCI image with an uncompressed layer. */
const MEDIA = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layer: 'application/vnd.oci.image.layer.v1.tar'
} as const

/**
 * Writes `image` as an OCI archive at `archive` and returns the archive's path. The layer tar is
 * made with fixed owners and times, so the same files give the same image digest.
 */
export async function writeOciArchive(image: OciImage, archive: string): Promise<string> {
  const work = mkdtempSync(join(tmpdir(), 'gpuhooks-oci-'))
  try {
    const root = join(work, 'rootfs')
    for (const [source, target] of Object.entries(image.files)) {
      if (!target.startsWith('/')) throw new Error(`image path ${target} must be absolute`)
      const dest = join(root, target)
      mkdirSync(dirname(dest), { recursive: true })
      copyFileSync(source, dest)
    }
    const layout = join(work, 'layout')
    mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true })
    const layerTar = join(work, 'layer.tar')
    await run('tar', ['-C', root, '--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '-cf', layerTar, '.'])
    const layer = blob(layout, readFileSync(layerTar))
    const config = blob(
      layout,
      json({
        architecture: 'amd64',
        os: 'linux',
        config: {
          Entrypoint: image.entrypoint,
          ...(image.cmd === undefined ? {} : { Cmd: image.cmd }),
          ...(image.user === undefined ? {} : { User: image.user }),
          Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin']
        },
        rootfs: { type: 'layers', diff_ids: [layer.digest] }
      })
    )
    const manifest = blob(
      layout,
      json({
        schemaVersion: 2,
        mediaType: MEDIA.manifest,
        config: { mediaType: MEDIA.config, ...config },
        layers: [{ mediaType: MEDIA.layer, ...layer }]
      })
    )
    const tag = image.ref.slice(image.ref.lastIndexOf(':') + 1)
    writeFileSync(
      join(layout, 'index.json'),
      json({
        schemaVersion: 2,
        mediaType: MEDIA.index,
        manifests: [
          {
            mediaType: MEDIA.manifest,
            ...manifest,
            annotations: { 'io.containerd.image.name': image.ref, 'org.opencontainers.image.ref.name': tag }
          }
        ]
      })
    )
    writeFileSync(join(layout, 'oci-layout'), json({ imageLayoutVersion: '1.0.0' }))
    await run('tar', ['-C', layout, '--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '-cf', archive, '.'])
    return archive
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** Stores `content` as a blob of the layout and returns its descriptor's digest and size. */
function blob(layout: string, content: Buffer): { digest: string; size: number } {
  const hex = createHash('sha256').update(content).digest('hex')
  const path = join(layout, 'blobs', 'sha256', hex)
  writeFileSync(path, content)
  return { digest: `sha256:${hex}`, size: statSync(path).size }
}

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value))
