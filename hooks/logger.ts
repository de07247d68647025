/**
 * The log of each gpuhooks process (hook service, workload agent, certificate Job): pino writing
 * JSON lines to standard output synchronously.
 *
 * Every one of these processes ends with `process.exit`. pino's default destination writes
 * asynchronously and, at exit, flushes what it still holds with a synchronous write while an
 * earlier asynchronous write may still be pending in libuv's thread pool; on a busy machine the
 * last lines then reach the pipe out of order ("stopped" before "draining"). The processes log a
 * few lines per event, never per request, so a synchronous write costs nothing that matters and
 * keeps the log in the order it was written.
 */
import { pino, type Logger, type LoggerOptions } from 'pino'

/** A pino logger on standard output, written synchronously. */
export function processLogger(options: LoggerOptions): Logger {
  return pino(options, pino.destination({ dest: 1, sync: true }))
}

/**
 * What a component needs of a logger, by level: an object first, a message second (pino's order).
 * A pino Logger is one; a test passes a recorder without casting.
 */
export type LogTo<Level extends 'debug' | 'info' | 'warn' | 'error'> = Record<Level, (fields: object, message: string) => void>
