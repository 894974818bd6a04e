/* block_manager.cpp: ref-counted KV blocks, an intrusive LRU free list, chained-hash prefix cache. */
#include "block_manager.h"

#include "../include/engine.h" // defines: ENG_SEQ_PROMPT_LOGITS

namespace maya {

uint64_t BlockManager::hash_block(uint64_t prev, const int32_t *tokens, int32_t n) {
    // FNV-1a over the previous hash and the token ids, then a splitmix64 finaliser.
    uint64_t h = 0xCBF29CE484222325ull ^ prev;
    h *= 0x100000001B3ull;
    for (int32_t i = 0; i < n; i++) {
        h ^= (uint64_t)(uint32_t)tokens[i];
        h *= 0x100000001B3ull;
    }
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}

uint64_t BlockManager::seq_block_hash(const Sequence &seq, int32_t i, int32_t block_size, uint64_t prev) {
    int32_t b0 = i * block_size, b1 = b0 + block_size;
    uint64_t h = hash_block(prev, seq.tokens.data() + (size_t)b0, block_size);
    for (const SeqImage &img : seq.images) {
        if (img.tok0 >= b1 || img.tok0 + img.n_tok <= b0) continue;
        // The grid too: the same pixels in another shape give other M-RoPE positions.
        int32_t words[5] = {(int32_t)(uint32_t)img.hash, (int32_t)(uint32_t)(img.hash >> 32), img.grid[0], img.grid[1],
                            img.grid[2]};
        h = hash_block(h, words, 5);
    }
    return h;
}

void BlockManager::init(int32_t n_blocks, int32_t block_size) {
    block_size_ = block_size;
    blocks_.assign((size_t)n_blocks, Block());
    cache_.clear();
    cache_.reserve((size_t)n_blocks);
    free_head_ = free_tail_ = -1;
    n_free_ = n_cached_free_ = 0;
    for (int32_t b = 0; b < n_blocks; b++) free_push_back(b);
    scratch_ids_.reserve((size_t)n_blocks);
    scratch_hashes_.reserve((size_t)n_blocks);
}

void BlockManager::free_push_back(int32_t b) {
    Block &k = blocks_[(size_t)b];
    k.prev = free_tail_;
    k.next = -1;
    if (free_tail_ >= 0) blocks_[(size_t)free_tail_].next = b;
    else free_head_ = b;
    free_tail_ = b;
    n_free_++;
    n_cached_free_ += k.has_hash;
}

void BlockManager::free_remove(int32_t b) {
    Block &k = blocks_[(size_t)b];
    if (k.prev >= 0) blocks_[(size_t)k.prev].next = k.next;
    else free_head_ = k.next;
    if (k.next >= 0) blocks_[(size_t)k.next].prev = k.prev;
    else free_tail_ = k.prev;
    k.prev = k.next = -1;
    n_free_--;
    n_cached_free_ -= k.has_hash;
}

int32_t BlockManager::free_pop_front() {
    int32_t b = free_head_;
    if (b < 0) return -1;
    free_remove(b);
    Block &k = blocks_[(size_t)b];
    if (k.has_hash) { // evict its cached prefix
        auto it = cache_.find(k.hash);
        if (it != cache_.end() && it->second == b) cache_.erase(it);
        k.has_hash = false;
    }
    k.ref = 1;
    return b;
}

void BlockManager::take(int32_t b) {
    Block &k = blocks_[(size_t)b];
    if (k.ref == 0) free_remove(b);
    k.ref++;
}

int32_t BlockManager::lookup(uint64_t h, const int32_t *tokens) const {
    auto it = cache_.find(h);
    if (it == cache_.end()) return -1;
    const Block &k = blocks_[(size_t)it->second];
    for (int32_t i = 0; i < block_size_; i++)
        if (k.tokens[(size_t)i] != tokens[i]) return -1; // hash collision
    return it->second;
}

int32_t BlockManager::match(const Sequence &seq, std::vector<int32_t> *ids, std::vector<uint64_t> *hashes) const {
    ids->clear();
    hashes->clear();
    int32_t n = (int32_t)seq.tokens.size();
    int32_t max_blocks = n > 0 ? (n - 1) / block_size_ : 0;
    if (seq.flags & ENG_SEQ_PROMPT_LOGITS) max_blocks = 0; // every prompt position is computed
    uint64_t prev = 0;
    for (int32_t i = 0; i < max_blocks; i++) {
        const int32_t *t = seq.tokens.data() + (size_t)i * block_size_;
        uint64_t h = seq_block_hash(seq, i, block_size_, prev);
        int32_t b = lookup(h, t);
        if (b < 0) break;
        ids->push_back(b);
        hashes->push_back(h);
        prev = h;
    }
    return (int32_t)ids->size();
}

bool BlockManager::can_allocate(const Sequence &seq) const {
    int32_t hits = match(seq, &scratch_ids_, &scratch_hashes_);
    int32_t total = ((int32_t)seq.tokens.size() + block_size_ - 1) / block_size_, in_use = 0;
    for (int32_t i = 0; i < hits; i++) in_use += blocks_[(size_t)scratch_ids_[(size_t)i]].ref > 0;
    return total - in_use <= n_free_;
}

int32_t BlockManager::allocate(Sequence &seq) {
    if (!can_allocate(seq)) return -1; // leaves the match in scratch_ids_/scratch_hashes_
    int32_t total = ((int32_t)seq.tokens.size() + block_size_ - 1) / block_size_;
    seq.block_table.clear();
    seq.block_hashes.assign(scratch_hashes_.begin(), scratch_hashes_.end());
    for (int32_t b : scratch_ids_) {
        take(b);
        seq.block_table.push_back(b);
    }
    while ((int32_t)seq.block_table.size() < total) seq.block_table.push_back(free_pop_front());
    seq.n_computed = (int32_t)scratch_ids_.size() * block_size_;
    return seq.n_computed;
}

void BlockManager::deallocate(Sequence &seq) {
    for (size_t i = seq.block_table.size(); i-- > 0;) {
        Block &k = blocks_[(size_t)seq.block_table[i]];
        if (--k.ref == 0) free_push_back(seq.block_table[i]);
    }
    seq.block_table.clear();
    seq.block_hashes.clear();
    seq.n_computed = 0;
}

bool BlockManager::can_append(const Sequence &seq, int32_t extra) const {
    int32_t n = (int32_t)seq.tokens.size() + extra;
    int32_t need = (n + block_size_ - 1) / block_size_ - (int32_t)seq.block_table.size();
    return need <= n_free_;
}

bool BlockManager::append(Sequence &seq, int32_t extra) {
    if (!can_append(seq, extra)) return false;
    while ((int32_t)seq.block_table.size() * block_size_ < (int32_t)seq.tokens.size() + extra)
        seq.block_table.push_back(free_pop_front());
    return true;
}

void BlockManager::trim(Sequence &seq) {
    size_t keep = (seq.tokens.size() + (size_t)block_size_ - 1) / (size_t)block_size_;
    while (seq.block_table.size() > keep) {
        Block &k = blocks_[(size_t)seq.block_table.back()];
        if (--k.ref == 0) free_push_back(seq.block_table.back());
        seq.block_table.pop_back();
    }
}

void BlockManager::commit(Sequence &seq) {
    int32_t n_full = seq.n_computed / block_size_;
    for (int32_t i = (int32_t)seq.block_hashes.size(); i < n_full; i++) {
        const int32_t *t = seq.tokens.data() + (size_t)i * block_size_;
        uint64_t h = seq_block_hash(seq, i, block_size_, i > 0 ? seq.block_hashes[(size_t)i - 1] : 0);
        seq.block_hashes.push_back(h);
        int32_t b = seq.block_table[(size_t)i];
        if (cache_.count(h)) continue; // an identical block is already cached
        Block &k = blocks_[(size_t)b];
        cache_[h] = b;
        k.has_hash = true;
        k.hash = h;
        k.tokens.assign(t, t + block_size_);
    }
}

} // namespace maya
