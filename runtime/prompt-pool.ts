/**
 * PromptPool: a few prompt worker threads (runtime/prompt-worker.ts), started on first use, that
 * process large images and render and tokenise large conversations so the event loop keeps serving /health and other
 * requests meanwhile. Jobs go to the worker with the fewest in flight. A worker that dies fails its
 * jobs and is replaced on the next job.
 */
import type { Worker } from 'node:worker_threads';
import { DialectError, type ChatTurn, type ParserOptions, type RenderOptions } from '../dialects/dialect.ts';
import { startModuleWorker } from '../engine-cuda/module-worker.ts';
import type { PromptJob, PromptResult, PromptWorkerInit } from './prompt-worker.ts';
import type { ImageProcessorConfig, ProcessedImage, RgbImage } from '../checkpoint/image-processor.ts';

interface Slot {
  worker: Worker;
  /** Each job's settlement (a render's ids and parser, or a processed image). */
  pending: Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>;
}

export class PromptPool {
  private readonly slots: Array<Slot | undefined>;
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly init: PromptWorkerInit,
    size: number,
  ) {
    this.slots = Array.from({ length: Math.max(1, size) }, () => undefined);
  }

  /** The rendered prompt's ids and parser options; rejects with DialectError like renderPrompt. */
  render(
    turns: ChatTurn[],
    options: RenderOptions,
    plain: string[],
  ): Promise<{ promptIds: number[]; parser: ParserOptions }> {
    if (this.closed) return Promise.reject(new Error('the prompt pool is closed'));
    const slot = this.pick();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      const job: PromptJob = { id, turns, options, plain };
      slot.worker.postMessage(job);
    });
  }

  /**
   * Glm4vImageProcessor on a worker thread (resizing a large image blocks for a second or more).
   * The RGB buffer is transferred (copied first when it is a view into a larger buffer), the
   * pixel rows come back transferred.
   */
  processImage(config: ImageProcessorConfig, image: RgbImage): Promise<ProcessedImage> {
    if (this.closed) return Promise.reject(new Error('the prompt pool is closed'));
    const slot = this.pick();
    const id = this.nextId++;
    const whole = image.data.byteOffset === 0 && image.data.byteLength === image.data.buffer.byteLength;
    const data = whole ? image.data : image.data.slice();
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      const job: PromptJob = { id, kind: 'image', config, image: { ...image, data } };
      slot.worker.postMessage(job, [data.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot?.worker.terminate()));
  }

  private pick(): Slot {
    let best = 0;
    for (let i = 0; i < this.slots.length; i++) {
      const slot = this.slots[i];
      if (!slot) return (this.slots[i] = this.start(i));
      if (slot.pending.size < this.slots[best]!.pending.size) best = i;
    }
    return this.slots[best]!;
  }

  private start(index: number): Slot {
    const worker = startModuleWorker(new URL('./prompt-worker.ts', import.meta.url), this.init);
    worker.unref();
    const slot: Slot = { worker, pending: new Map() };
    worker.on('message', (result: PromptResult) => {
      const job = slot.pending.get(result.id);
      if (!job) return;
      slot.pending.delete(result.id);
      if ('error' in result)
        job.reject(result.error.dialect ? new DialectError(result.error.message) : new Error(result.error.message));
      else job.resolve('image' in result ? result.image : result);
    });
    const fail = (error: Error) => {
      for (const job of slot.pending.values()) job.reject(error);
      slot.pending.clear();
      if (this.slots[index] === slot) this.slots[index] = undefined;
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`prompt worker exited (${code})`)));
    return slot;
  }
}
