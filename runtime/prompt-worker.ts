/**
 * A prompt worker thread: loads the model directory's tokenizer and dialect once, then renders
 * and tokenises conversations off the main thread (large inputs would otherwise block every other
 * request while the template and the tokenizer run), and runs the image processor on large images.
 * Messages: PromptJob in, PromptResult out.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Tokenizer } from '../checkpoint/tokenizer.ts';
import { DialectError, type ChatTurn, type ParserOptions, type RenderOptions } from '../dialects/dialect.ts';
import { loadDialect } from '../dialects/select.ts';
import {
  processImage,
  type ImageProcessorConfig,
  type ProcessedImage,
  type RgbImage,
} from '../checkpoint/image-processor.ts';

export interface PromptWorkerInit {
  dir: string;
  dialect?: string;
  /** MAYA_CHAT_TEMPLATE: a chat template file replacing the checkpoint's. */
  chatTemplate?: string;
}

export type PromptJob =
  | { id: number; kind?: 'render'; turns: ChatTurn[]; options: RenderOptions; plain: string[] }
  | { id: number; kind: 'image'; config: ImageProcessorConfig; image: RgbImage };

export type PromptResult =
  | { id: number; promptIds: number[]; parser: ParserOptions }
  | { id: number; image: ProcessedImage }
  | { id: number; error: { dialect: boolean; message: string } };

const init = workerData as PromptWorkerInit;
const port = parentPort!;
const ready = Promise.all([Tokenizer.fromDir(init.dir), loadDialect(init.dir, init.dialect, init.chatTemplate)]);

port.on('message', (job: PromptJob) => {
  if (job.kind === 'image') {
    // Resizing and patch flattening of a large image take a second or more of CPU: done here.
    processImage(job.config, job.image).then(
      (image) => port.postMessage({ id: job.id, image } satisfies PromptResult, [image.pixels.buffer as ArrayBuffer]),
      (error: unknown) =>
        port.postMessage({ id: job.id, error: { dialect: false, message: (error as Error).message } }),
    );
    return;
  }
  void ready.then(
    ([tokenizer, dialect]) => {
      let result: PromptResult;
      try {
        const rendered = dialect.renderPrompt(job.turns, job.options);
        result = { id: job.id, promptIds: tokenizer.encodePrompt(rendered.text, job.plain), parser: rendered.parser };
      } catch (error) {
        result = { id: job.id, error: { dialect: error instanceof DialectError, message: (error as Error).message } };
      }
      port.postMessage(result);
    },
    (error: unknown) =>
      port.postMessage({
        id: job.id,
        error: { dialect: false, message: `prompt worker failed to load: ${(error as Error).message}` },
      }),
  );
});
