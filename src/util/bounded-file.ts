/**
 * A small file from outside the program (a mounted secret), read within a size and a time, as
 * every outside input is. A path can name more than a file: a FIFO or /dev/stdin waits for a
 * writer that may never come, /dev/zero never ends, a pipe can trickle a byte at a time. Read
 * with readFileSync, any of them would hold the start forever or fill the heap.
 *
 * Synchronous, since the configuration is read before anything else runs: nothing waits
 * behind it but the start itself.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

export interface ReadLimits {
  /** A file longer than this is refused, having read one byte more. */
  maxBytes: number;
  /** A file that has not ended this long after it was opened is refused. */
  timeoutMs: number;
}

/** Why a file could not be read within its limits; the message names the path, never the content. */
export class FileReadError extends Error {
  override name = 'FileReadError';
}

/** How long a read that found nothing yet waits before it tries again. */
const POLL_MS = 10;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * The text of the file at `path` (UTF-8), or a FileReadError: it cannot be opened or read, it is
 * longer than `maxBytes`, or it has not ended within `timeoutMs`. A pipe works, process
 * substitution's `<(pass show x)` included, when its writer finishes in time.
 */
export function readFileBounded(path: string, limits: ReadLimits): string {
  const deadline = performance.now() + limits.timeoutMs;
  let fd: number;
  try {
    // Non-blocking: opening a FIFO does not wait for a writer, and a read that finds nothing
    // yet answers EAGAIN instead of waiting, so that the deadline below is kept. (A regular
    // file is read as usual.)
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    throw new FileReadError(`cannot read ${path} (${errorCode(err)})`);
  }
  try {
    // A FIFO reads as ended while no writer has it open, which may be a writer that has not
    // opened it yet: until something comes, its end is awaited like more data.
    const fifo = fstatSync(fd).isFIFO();
    const buffer = Buffer.alloc(limits.maxBytes + 1);
    let length = 0;
    for (;;) {
      let n: number | undefined;
      try {
        n = readSync(fd, buffer, length, buffer.length - length, null);
      } catch (err) {
        if (errorCode(err) !== 'EAGAIN') throw new FileReadError(`cannot read ${path} (${errorCode(err)})`);
      }
      if (n === 0 && !(fifo && length === 0)) return buffer.toString('utf8', 0, length);
      length += n ?? 0;
      if (length > limits.maxBytes) throw new FileReadError(`${path} is longer than ${limits.maxBytes} bytes`);
      if (performance.now() >= deadline)
        throw new FileReadError(`${path} did not end within ${limits.timeoutMs / 1000} s (a pipe or a device that is kept open?)`);
      if (!n) Atomics.wait(pause, 0, 0, POLL_MS);
    }
  } finally {
    closeSync(fd);
  }
}

function errorCode(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err);
}
