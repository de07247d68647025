/**
 * The server-side state behind the unit layer's API-server stand-in (server-defaults.ts): the
 * seeded allocators and counters a create or update draws on, and the refusal it throws. Apart
 * from the defaulting so that a test can hold one server across every step and see ports and
 * addresses stay taken.
 */
/** Thrown where the API server would refuse the write. */
export class ServerError extends Error {
  constructor(
    /** The API `Status.reason`: `AlreadyExists`, `Invalid`, `Conflict`, ... */
    readonly reason: string,
    message: string
  ) {
    super(`${reason}: ${message}`)
    this.name = 'ServerError'
  }
}

/** Options for a {@link FakeServer}; everything it allocates follows from the seed. */
export interface FakeServerOptions {
  seed?: number
  /** The creation timestamp stamped on every object. */
  now?: string
  /** First address of the Service range; allocations are offsets from it (default 10.96.0.0). */
  serviceRangeStart?: string
}

/**
 * The server-side state a defaulting pass needs: a seeded random source (the real allocators are
 * random, so tests must not depend on an order), node ports in use, counters. Pass the same
 * instance through every step of a test.
 */
export class FakeServer {
  /** The creation timestamp stamped on new objects; a test whose clock moves may move it along. */
  now: string
  private state: number
  private version = 0
  private readonly nodePorts = new Map<number, string>()
  private readonly clusterIPs = new Set<string>()
  private readonly rangeStart: number

  constructor(options: FakeServerOptions = {}) {
    this.state = (options.seed ?? 1) >>> 0
    this.now = options.now ?? '2026-01-01T00:00:00Z'
    const [a = 10, b = 96, c = 0, d = 0] = (options.serviceRangeStart ?? '10.96.0.0').split('.').map(Number)
    this.rangeStart = ((a << 24) | (b << 16) | (c << 8) | d) >>> 0
  }

  /** Next value of a mulberry32 generator in [0, 1). */
  random(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  uid(): string {
    const hex = Array.from({ length: 32 }, () => Math.floor(this.random() * 16).toString(16)).join('')
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`
  }

  resourceVersion(): string {
    this.version += 1
    return String(this.version)
  }

  /** Five characters as `names.SimpleNameGenerator` picks them. */
  nameSuffix(): string {
    const alphabet = 'bcdfghjklmnpqrstvwxz2456789'
    return Array.from({ length: 5 }, () => alphabet[Math.floor(this.random() * alphabet.length)]).join('')
  }

  /** A free address of the Service range (never the range's first, which kube-apiserver keeps). */
  allocateClusterIP(): string {
    for (;;) {
      const n = this.rangeStart + 1 + Math.floor(this.random() * 4000)
      const ip = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')
      if (!this.clusterIPs.has(ip)) {
        this.clusterIPs.add(ip)
        return ip
      }
    }
  }

  /** Marks `port` as held by `owner`; refused when another object holds it. */
  reserveNodePort(port: number, owner: string): void {
    const holder = this.nodePorts.get(port)
    if (holder !== undefined && holder !== owner) {
      throw new ServerError('Invalid', `spec.ports.nodePort: Invalid value: ${port}: provided port is already allocated`)
    }
    this.nodePorts.set(port, owner)
  }

  /** A random free port of 30000-32767, held by `owner`. */
  allocateNodePort(owner: string): number {
    for (;;) {
      const port = 30000 + Math.floor(this.random() * 2768)
      if (!this.nodePorts.has(port)) {
        this.nodePorts.set(port, owner)
        return port
      }
    }
  }

  /** Frees every port `owner` holds except `keep`. */
  releaseNodePorts(owner: string, keep: readonly number[] = []): void {
    for (const [port, holder] of this.nodePorts) if (holder === owner && !keep.includes(port)) this.nodePorts.delete(port)
  }
}
