/* test_block_manager.cpp: allocation, ref counts, chained-hash prefix reuse, LRU eviction. */
#include <vector>

#include "../src/block_manager.h"
#include "test.h"

using namespace maya;

static Sequence seq_of(int n, int salt = 0) {
    Sequence s;
    for (int i = 0; i < n; i++) s.tokens.push_back(i * 3 + 1 + salt * (i == 0));
    s.n_prompt = n;
    return s;
}

/* As if the backend computed every token: what the scheduler does after a step. */
static void compute_all(BlockManager &bm, Sequence &s) {
    s.n_computed = (int32_t)s.tokens.size();
    bm.commit(s);
}

TEST(block_manager_allocate_and_free) {
    BlockManager bm;
    bm.init(8, 16);
    Sequence a = seq_of(40);
    CHECK(bm.can_allocate(a));
    CHECK(bm.allocate(a) == 0); // nothing cached yet
    CHECK(a.block_table.size() == 3 && bm.n_free() == 5 && a.n_computed == 0);
    for (int b : a.block_table) CHECK(bm.ref_count(b) == 1);
    compute_all(bm, a);
    CHECK(a.block_hashes.size() == 2); // only full blocks are registered
    bm.deallocate(a);
    CHECK(bm.n_free() == 8 && a.block_table.empty() && a.n_computed == 0);
    CHECK(bm.n_cached_free() == 2); // freed blocks keep their prefix
}

TEST(block_manager_prefix_reuse_and_ref_counts) {
    BlockManager bm;
    bm.init(8, 16);
    Sequence a = seq_of(40);
    bm.allocate(a);
    compute_all(bm, a);
    Sequence b = seq_of(40);
    CHECK(bm.allocate(b) == 32); // two full blocks; the third (partial) is recomputed
    CHECK(b.n_computed == 32 && b.block_table[0] == a.block_table[0] && b.block_table[1] == a.block_table[1]);
    CHECK(b.block_table[2] != a.block_table[2]);
    CHECK(bm.ref_count(a.block_table[0]) == 2 && bm.ref_count(a.block_table[2]) == 1);
    CHECK(bm.n_free() == 8 - 4);
    bm.deallocate(a);
    CHECK(bm.ref_count(b.block_table[0]) == 1 && bm.n_free() == 8 - 3);
    bm.deallocate(b);
    // The last prompt token is never served from cache: 33 tokens -> 2 blocks, 32 tokens -> 1.
    Sequence c = seq_of(33), d = seq_of(32), e = seq_of(17);
    CHECK(bm.allocate(c) == 32);
    CHECK(bm.allocate(d) == 16);
    CHECK(bm.allocate(e) == 16);
    bm.deallocate(c);
    bm.deallocate(d);
    bm.deallocate(e);
    // Chaining: a change in block 0 invalidates every later block; a change in block 1 keeps block 0.
    Sequence f = seq_of(40, 5);
    CHECK(bm.allocate(f) == 0);
    bm.deallocate(f);
    Sequence g = seq_of(40);
    g.tokens[20] = 999;
    CHECK(bm.allocate(g) == 16);
    bm.deallocate(g);
    CHECK(BlockManager::hash_block(1, g.tokens.data(), 16) != BlockManager::hash_block(2, g.tokens.data(), 16));
}

TEST(block_manager_exhaustion_and_eviction) {
    BlockManager bm;
    bm.init(4, 16);
    Sequence a = seq_of(33);
    bm.allocate(a);
    compute_all(bm, a);
    Sequence big = seq_of(40, 1);
    CHECK(!bm.can_allocate(big)); // needs 3, 1 free
    CHECK(bm.allocate(big) == -1 && big.block_table.empty());
    bm.deallocate(a);
    CHECK(bm.n_cached_free() == 2);
    // New, unrelated sequences take every block: the cached prefix is evicted.
    Sequence x = seq_of(64, 7);
    CHECK(bm.allocate(x) == 0 && bm.n_free() == 0 && bm.n_cached_free() == 0);
    compute_all(bm, x);
    bm.deallocate(x);
    CHECK(bm.n_cached_free() == 4); // x's four full blocks are now the cached ones
    Sequence again = seq_of(33);
    CHECK(bm.allocate(again) == 0);
    bm.deallocate(again);
    // append: grows by one block when the tokens cross a boundary, refuses when none is free.
    Sequence s = seq_of(16);
    bm.allocate(s);
    CHECK(s.block_table.size() == 1);
    s.tokens.push_back(5);
    CHECK(bm.can_append(s) && bm.append(s) && s.block_table.size() == 2);
    Sequence hog = seq_of(32, 9);
    CHECK(bm.allocate(hog) == 0 && bm.n_free() == 0);
    for (int i = 0; i < 16; i++) s.tokens.push_back(6);
    CHECK(!bm.can_append(s) && !bm.append(s) && s.block_table.size() == 2);
}

TEST(block_manager_free_hits_count_against_free_blocks) {
    // A cached prefix sitting in free blocks must not be double-counted as available space.
    BlockManager bm;
    bm.init(3, 16);
    Sequence a = seq_of(33);
    bm.allocate(a);
    compute_all(bm, a);
    bm.deallocate(a); // 3 free, 2 of them caching a's prefix
    Sequence b = seq_of(48);
    CHECK(bm.can_allocate(b)); // 2 hits (free) + 1 miss = 3 blocks
    CHECK(bm.n_cached_free() == 2);
    CHECK(bm.allocate(b) == 32 && bm.n_free() == 0 && bm.n_cached_free() == 0);
    for (int blk : b.block_table) CHECK(bm.ref_count(blk) == 1);
}
