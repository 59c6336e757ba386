/**
 * Peak resident memory of a child process, sampled from /proc/<pid>/status (Linux). VmHWM is
 * the kernel's own high-water mark of the resident set, so a short spike between two samples
 * is still seen at the next sample; VmRSS is kept too in case VmHWM is missing.
 */
import { readFile } from 'node:fs/promises';

export interface MemorySample {
  rssBytes: number;
  hwmBytes: number;
}

/** VmRSS and VmHWM of `pid`, or undefined when the process is gone or /proc is unavailable. */
export async function readMemory(pid: number): Promise<MemorySample | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = (name: string): number => {
    const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : 0;
  };
  return { rssBytes: kb('VmRSS'), hwmBytes: kb('VmHWM') };
}

/** Polls a process every `intervalMs` and keeps the largest value seen. */
export class PeakMemorySampler {
  private peak = 0;
  private samples = 0;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(
    private readonly pid: number,
    private readonly intervalMs = 50,
  ) {}

  start(): void {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), this.intervalMs);
  }

  /** Takes one last sample (when the process still exists) and stops. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.sample();
  }

  /** Largest VmHWM/VmRSS seen, in bytes; undefined when no sample could be read. */
  get peakBytes(): number | undefined {
    return this.samples > 0 ? this.peak : undefined;
  }

  private async sample(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const m = await readMemory(this.pid);
      if (m) {
        this.samples++;
        this.peak = Math.max(this.peak, m.rssBytes, m.hwmBytes);
      }
    } finally {
      this.busy = false;
    }
  }
}
