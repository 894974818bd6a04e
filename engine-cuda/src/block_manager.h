/* block_manager.h: the paged KV cache's bookkeeping: fixed blocks, ref counts, prefix reuse.
 *
 * A block holds block_size consecutive token positions of one or more sequences (shared when
 * their prefixes match). Every full, computed block is registered under a hash chained from the
 * previous block's hash (nano-vllm / vLLM prefix caching), with its token ids kept to rule out
 * collisions. A freed block keeps its hash and stays reusable until it is handed out again; free
 * blocks are recycled least-recently-freed first, and a sequence's tail blocks are freed first.
 * Blocks holding image tokens (eng_seq_add_mm) also hash the images' pixel hashes.
 * The last prompt token is never served from cache (its logits are needed), so at most
 * floor((n - 1) / block_size) blocks of an n-token prompt are reused.
 */
#ifndef MAYA_BLOCK_MANAGER_H
#define MAYA_BLOCK_MANAGER_H

#include <stddef.h>
#include <stdint.h>
#include <unordered_map>
#include <vector>

#include "sequence.h" // defines: Sequence

namespace maya {

class BlockManager {
  public:
    void init(int32_t n_blocks, int32_t block_size);

    /* Whether allocate(seq) would succeed now. */
    bool can_allocate(const Sequence &seq) const;
    /* Reuses the cached prefix of seq.tokens (none for a PROMPT_LOGITS sequence) and allocates
     * blocks for the rest; sets seq.block_table, seq.block_hashes and seq.n_computed (= cached
     * tokens). Returns the cached token count, or -1 if there are not enough free blocks (seq unchanged). */
    int32_t allocate(Sequence &seq);
    /* Releases seq's blocks (they stay cached) and clears its table; n_computed = 0. */
    void deallocate(Sequence &seq);
    /* Whether seq has (or can get) room for all of seq.tokens and extra positions after them
     * (drafted tokens under verification). */
    bool can_append(const Sequence &seq, int32_t extra = 0) const;
    /* Adds blocks so seq.tokens and extra more positions fit. Returns false (seq unchanged) when
     * none are free. */
    bool append(Sequence &seq, int32_t extra = 0);
    /* Frees seq's blocks past those seq.tokens needs (the rejected drafts' positions). They were
     * never full and computed, so they hold no prefix-cache hash. */
    void trim(Sequence &seq);
    /* Registers the full blocks of seq that became computed (call after each forward). */
    void commit(Sequence &seq);

    int32_t block_size() const { return block_size_; }
    int32_t n_blocks() const { return (int32_t)blocks_.size(); }
    int32_t n_free() const { return n_free_; }
    /* Free blocks that still hold a reusable cached prefix. */
    int32_t n_cached_free() const { return n_cached_free_; }
    int32_t ref_count(int32_t block) const { return blocks_[(size_t)block].ref; }

    static uint64_t hash_block(uint64_t prev, const int32_t *tokens, int32_t n);
    /* Hash of block i of seq: hash_block over its tokens, then, for each image of seq with tokens
     * in the block, that image's hash and grid mixed in (so identical placeholder tokens of
     * different pixels never share a block, and the same pixels do). */
    static uint64_t seq_block_hash(const Sequence &seq, int32_t i, int32_t block_size, uint64_t prev);

  private:
    struct Block {
        int32_t ref = 0;
        bool has_hash = false;
        uint64_t hash = 0;
        std::vector<int32_t> tokens;  // (block_size) ids, when has_hash
        int32_t prev = -1, next = -1; // free-list links (when ref == 0)
    };
    /* Cached prefix of seq: block ids of the matched blocks and their hashes. */
    int32_t match(const Sequence &seq, std::vector<int32_t> *ids, std::vector<uint64_t> *hashes) const;
    int32_t lookup(uint64_t h, const int32_t *tokens) const;
    void free_push_back(int32_t b);
    void free_remove(int32_t b);
    int32_t free_pop_front();
    void take(int32_t b); // ref 0 -> 1 (from the free list) or ref++

    std::vector<Block> blocks_;
    std::unordered_map<uint64_t, int32_t> cache_; // hash -> block
    int32_t block_size_ = 16;
    int32_t free_head_ = -1, free_tail_ = -1, n_free_ = 0;
    int32_t n_cached_free_ = 0; // free blocks with has_hash
    mutable std::vector<int32_t> scratch_ids_;
    mutable std::vector<uint64_t> scratch_hashes_;
};

} // namespace maya

#endif
