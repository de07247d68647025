/**
 * A request body as it arrives: the stream the body parser reads in place of the raw request, so
 * that a body holds the in-flight budget with the bytes it has actually sent, never with the
 * length it declares, and a body that stops arriving is cut off.
 *
 * Counting what arrives is what makes a slow body harmless: a connection that declares 16 MiB and
 * sends a byte a second holds a few bytes, not 16 MiB, for as long as it trickles. Counting what
 * was declared let four such connections refuse every other request until the request timeout.
 */
import { Readable } from 'node:stream'

/** The request body bytes one listener holds: received, and not yet answered. */
export class Budget {
  held = 0

  /** @param max `MAX_INFLIGHT_BYTES`; 0 turns the bound off. */
  constructor(readonly max: number) {}

  /**
   * Whether a body already holding `own` bytes may hold `more`. Always when no other body holds
   * any, so that one body up to the body limit is served however large; else within `max`.
   */
  admits(own: number, more: number): boolean {
    return this.max <= 0 || this.held - own <= 0 || this.held + more <= this.max
  }

  /** Counts `bytes` that arrived. */
  take(bytes: number): void {
    this.held += bytes
  }

  /** Gives back what one body took; each body calls it once, from {@link ArrivingBody.release}. */
  give(bytes: number): void {
    this.held -= bytes
  }
}

/** Options of an {@link ArrivingBody}. */
export interface ArrivingBodyOptions {
  budget: Budget
  /** Longest wait for the next byte of the body (`BODY_STALL_TIMEOUT_SECONDS`). */
  stallTimeoutMs: number
  /** The answer when the next `more` bytes would pass the budget. */
  overBudget: (more: number) => Error
  /** The answer when no byte arrived for the stall timeout, `received` bytes in. */
  stalled: (received: number) => Error
}

/**
 * The body of one request. It starts reading the request only when the parser asks for it, so a
 * request whose body is never parsed (an unknown route, a declared length past the body limit)
 * is left to node, which discards the body once the answer is sent.
 *
 * A byte counts from the moment it is read until {@link release}, which the plugin calls when the
 * request is over: its response closed, or its connection closed (a response queued behind
 * another on a pipelined connection never closes by itself when the connection goes).
 */
export class ArrivingBody extends Readable {
  /** Bytes of the budget this body holds. */
  bytes = 0
  /** Bytes read from the request so far. */
  received = 0
  /** Refused for the budget while it arrived: the rest is being discarded, the connection kept. */
  refused = false
  released = false
  readonly #source: Readable
  readonly #options: ArrivingBodyOptions
  #started = false
  #stopped = false
  #arrivals = 0
  #timer: NodeJS.Timeout | undefined

  constructor(source: Readable, options: ArrivingBodyOptions) {
    super()
    this.#source = source
    this.#options = options
  }

  override _read(): void {
    if (this.#stopped) return
    if (!this.#started) {
      this.#started = true
      this.#source.on('data', this.#onData)
      this.#source.on('end', this.#onEnd)
      this.#source.on('error', this.#onError)
      this.#source.on('close', this.#onClose)
      this.#timer = setTimeout(this.#onTimer, this.#options.stallTimeoutMs)
      this.#timer.unref()
    }
    this.#source.resume()
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#stop(false)
    callback(error)
  }

  /** Gives the held bytes back, once, whichever ending comes first; what is still to come is discarded. */
  release(): void {
    if (this.released) return
    this.released = true
    this.#options.budget.give(this.bytes)
    this.bytes = 0
    this.#stop(true)
  }

  readonly #onData = (chunk: Buffer): void => {
    const { budget } = this.#options
    if (!budget.admits(this.bytes, chunk.length)) {
      this.refused = true
      this.#stop(true)
      this.#fail(this.#options.overBudget(chunk.length))
      return
    }
    this.bytes += chunk.length
    budget.take(chunk.length)
    this.received += chunk.length
    this.#arrivals++
    this.#timer?.refresh()
    if (!this.push(chunk)) this.#source.pause()
  }

  readonly #onEnd = (): void => {
    this.#stop(false)
    this.push(null)
  }

  readonly #onError = (error: Error): void => {
    this.#stop(false)
    this.#fail(error)
  }

  readonly #onClose = (): void => {
    if (this.#stopped) return
    this.#stop(false)
    this.#fail(new Error('the connection closed before the body was received'))
  }

  /**
   * The timer fired, but an event loop kept busy past the timeout runs its timers before it reads
   * the sockets: the bytes may be waiting. The check after the next read decides.
   */
  readonly #onTimer = (): void => {
    const seen = this.#arrivals
    setImmediate(() => {
      if (this.#stopped || this.#arrivals !== seen) return
      this.#stop(false)
      this.#fail(this.#options.stalled(this.received))
    })
  }

  /** Stops reading the request; `discard` lets the rest of the body flow away unread. */
  #stop(discard: boolean): void {
    if (this.#stopped) return
    this.#stopped = true
    if (!this.#started) return
    clearTimeout(this.#timer)
    this.#source.off('data', this.#onData)
    this.#source.off('end', this.#onEnd)
    this.#source.off('error', this.#onError)
    this.#source.off('close', this.#onClose)
    if (discard) this.#source.resume()
  }

  /**
   * Ends the stream with `error` for the parser to answer. A parser that has already given up on
   * the body (and answered it) no longer listens, and an error nobody listens to would crash the
   * process.
   */
  #fail(error: Error): void {
    if (this.listenerCount('error') > 0) this.destroy(error)
    else this.destroy()
  }
}
