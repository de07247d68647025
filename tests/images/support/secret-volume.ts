/**
 * A Secret volume's directory as the kubelet's atomic writer lays it out: each file a link
 * through `..data` to a numbered directory, and an update swaps `..data` in one rename, so a
 * process reading the volume sees the old content or the new, never half of each. Replacing the
 * content is what a Secret update does to a Pod that mounts it as a directory.
 */
import { chmodSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Volume } from 'kubernetes-types/core/v1.d.ts'

/** A file of the volume: the Secret's key, its path in the volume and its mode. */
export interface SecretItem {
  key: string
  path: string
  mode: number
}

/** A Secret volume's directory, written as the kubelet writes it. */
export class SecretVolume {
  private generation = 0
  constructor(
    readonly dir: string,
    private readonly items: SecretItem[]
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o755 })
  }

  /** Replaces the volume's content with `data` (by key) in one rename of `..data`. */
  write(data: Record<string, string | Buffer>): void {
    const version = `..${++this.generation}`
    const versionDir = join(this.dir, version)
    mkdirSync(versionDir, { mode: 0o755 })
    for (const item of this.items) {
      const value = data[item.key]
      if (value === undefined) throw new Error(`no ${item.key} for the secret volume`)
      writeFileSync(join(versionDir, item.path), value)
      chmodSync(join(versionDir, item.path), item.mode)
    }
    let previous: string | undefined
    try {
      previous = readlinkSync(join(this.dir, '..data'))
    } catch {
      previous = undefined
    }
    symlinkSync(version, join(this.dir, '..data_tmp'))
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'))
    for (const item of this.items) {
      try {
        symlinkSync(join('..data', item.path), join(this.dir, item.path))
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
    }
    if (previous !== undefined) rmSync(join(this.dir, previous), { recursive: true, force: true })
  }
}

/**
 * The directory of the Pod volume `volume` (a `secret` volume) holding `data`: its `items` with
 * their modes, or every key of `data` when it lists none, in `defaultMode` (0644 unless set).
 */
export function secretVolume(volume: Volume, dir: string, data: Record<string, string | Buffer>): SecretVolume {
  const secret = volume.secret
  if (secret === undefined) throw new Error(`volume ${volume.name} is not a Secret volume`)
  const mode = secret.defaultMode ?? 0o644
  const items =
    secret.items !== undefined
      ? secret.items.map((i) => ({ key: i.key, path: i.path, mode: i.mode ?? mode }))
      : Object.keys(data).map((key) => ({ key, path: key, mode }))
  const written = new SecretVolume(dir, items)
  written.write(data)
  return written
}
