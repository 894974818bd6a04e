/**
 * A request's constraint as it travels to the engine (plain data: the grammar and the stop ids
 * allowed where it accepts), and the per-vocabulary cache that turns it into TokenMatchers.
 * Compiled grammars and their per-state masks are kept for the most recent distinct constraints,
 * so repeated requests with one schema or tool set start warm.
 */
import type { Grammar } from './grammar.ts';
import { CompiledGrammar } from './matcher.ts';
import { MaskBuilder, TokenMatcher, TokenTrie, type VocabularyData } from './token-mask.ts';

export interface Constraint {
  grammar: Grammar;
  /** End-of-turn ids, allowed only where the grammar accepts. */
  stopIds: number[];
}

/** Compiled constraints kept (each with up to MAX_MASKS masks, see token-mask.ts). */
const MAX_CACHED = 16;

export class ConstraintCache {
  readonly trie: TokenTrie;
  private readonly builders = new Map<string, MaskBuilder>();

  constructor(vocab: VocabularyData) {
    this.trie = new TokenTrie(vocab);
  }

  matcher(constraint: Constraint): TokenMatcher {
    const key = JSON.stringify(constraint);
    let builder = this.builders.get(key);
    if (builder) {
      this.builders.delete(key);
    } else {
      const run = new CompiledGrammar(constraint.grammar, this.trie.specialIds, this.trie.maxTokenBytes).createRun({
        stripsLeadingSpace: this.trie.vocab.stripsLeadingSpace === true,
      });
      builder = new MaskBuilder(run, this.trie, constraint.stopIds);
      if (this.builders.size >= MAX_CACHED) this.builders.delete(this.builders.keys().next().value!);
    }
    this.builders.set(key, builder);
    return new TokenMatcher(builder);
  }
}
