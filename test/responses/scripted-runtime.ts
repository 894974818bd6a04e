/**
 * A GenerationRuntime for unit tests of the Responses pipeline logic: the real GLM-4.5 dialect
 * (the reference template) over FakeEngine, with a piece tokenizer whose ids index a list of
 * text pieces. End-to-end tests use the real engine on a real checkpoint instead.
 */
import { readFileSync } from 'node:fs';
import { createGlmDialect } from '../../dialects/glm.ts';
import { FakeEngine, type FakeScript } from '../helpers/fake-engine.ts';
import { ChatTemplate } from '../../checkpoint/chat-template.ts';
import type { GenerationRuntime, PipelineTokenizer } from '../../runtime/generation-runtime.ts';

const TEMPLATE = readFileSync(new URL('../dialects/fixtures/templates/glm-4.5.jinja', import.meta.url), 'utf8');
const SPECIALS = ['<|endoftext|>', '<|user|>', '<|observation|>'];

export interface ScriptedRuntime extends GenerationRuntime {
  engine: FakeEngine;
  /** Token ids for pieces (new pieces get new ids). */
  ids(pieces: string[]): number[];
}

export function scriptedRuntime(
  scripts: Array<{ pieces: string[]; finishReason?: FakeScript['finishReason']; cachedTokens?: number }>,
  contextLength = 4096,
  tokenDelayMs?: number,
): ScriptedRuntime {
  const vocab = [...SPECIALS];
  const idOf = (piece: string) => {
    let id = vocab.indexOf(piece);
    if (id < 0) id = vocab.push(piece) - 1;
    return id;
  };
  const ids = (pieces: string[]) => pieces.map(idOf);
  const resolved = scripts.map((s) => ({
    tokens: ids(s.pieces),
    finishReason: s.finishReason,
    cachedTokens: s.cachedTokens,
  }));
  const engine = new FakeEngine({ script: resolved, info: { contextLength }, tokenDelayMs });
  const tokenizer: PipelineTokenizer = {
    // One id per 4 characters: prompt length scales with the text, which the context check reads.
    encode: (text) => Array.from({ length: Math.ceil(text.length / 4) }, () => 0),
    tokenToId: (token) => (vocab.includes(token) ? vocab.indexOf(token) : undefined),
    createDecoder: () => ({ push: (id) => vocab[id] ?? '', flush: () => '' }),
  };
  const dialect = createGlmDialect('glm45', new ChatTemplate(TEMPLATE));
  return { id: 'scripted-glm', contextLength, engine, tokenizer, dialect, ids };
}

/** The pieces of a GLM-4.5 tool call to `name` with string `args`, as the model emits them. */
export function glmToolCall(name: string, args: Record<string, string>): string[] {
  return [
    '<tool_call>',
    name,
    '\n',
    ...Object.entries(args).flatMap(([key, value]) => [
      '<arg_key>',
      key,
      '</arg_key>',
      '\n',
      '<arg_value>',
      value,
      '</arg_value>',
      '\n',
    ]),
    '</tool_call>',
  ];
}
