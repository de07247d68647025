/**
 * The images the real-node scenarios run, imported into the node's containerd.
 */
import { join } from 'node:path'
import type { RealNode } from './node.ts'
import { writeOciArchive } from './oci.ts'

/** The node binary of this machine and the libraries it loads, as an image (development stand-in). */
export async function workloadImage(node: RealNode): Promise<string> {
  const ref = 'localhost/gpuhooks/node-workload:host'
  const libs = ['libdl.so.2', 'libstdc++.so.6', 'libm.so.6', 'libgcc_s.so.1', 'libpthread.so.0', 'libc.so.6'].map(
    (l) => `/lib/x86_64-linux-gnu/${l}`
  )
  const files: Record<string, string> = { '/usr/bin/node': '/usr/bin/node', '/lib64/ld-linux-x86-64.so.2': '/lib64/ld-linux-x86-64.so.2' }
  for (const lib of libs) files[lib] = lib
  const archive = await writeOciArchive({ ref, files, entrypoint: ['/usr/bin/node'] }, join(node.dir, 'workload.tar'))
  await node.importImage(archive)
  return ref
}
