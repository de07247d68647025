/**
 * Free loopback ports for processes the tests start. The ports are held open together while they
 * are chosen, so one call never returns the same port twice; between the close here and the
 * caller's bind another process could still take one (run cluster files one at a time).
 */
import { createServer, type AddressInfo } from 'node:net'

/** `count` distinct free TCP ports on 127.0.0.1. */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer()
          server.once('error', reject)
          server.listen(0, '127.0.0.1', () => resolve(server))
        })
    )
  )
  const ports = servers.map((server) => (server.address() as AddressInfo).port)
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
  return ports
}
