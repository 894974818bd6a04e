/**
 * The Lua scripts of the Redis ResponseStore. Each store operation is ONE script, so Redis runs it
 * atomically: the expiry sweep, the size and uniqueness checks, the block reference counts, the
 * LRU and the entry/byte/owner bounds are decided and applied in one step, with no read-then-write
 * race between replicas. A failed script (connection lost) wrote nothing or everything.
 *
 * Data model under the prefix P (default `maya:`); `scope` is the credential scope (a keyed hash,
 * never a key), `sn` a snapshot serial, `sp` a spine serial, `digest` the SHA-256 of an item's
 * JSON. No key name holds a credential or prompt text.
 *
 *   P g                 hash   global counters: entries, meta, refs, blockBytes, blocks
 *   P s:<scope>         hash   the same counters for one scope (owner quotas)
 *   P i:<scope>         hash   response id → sn
 *   P n:<sn>            hash   one snapshot: scope, id, meta (Response JSON with output: []),
 *                              mb (meta bytes), sp, ie (input end), e (end), x (expires at, ms)
 *   P lru, P lru:<scope> zset  sn by last-use tick (global and per scope)
 *   P exp               zset   sn by expiry time (ms)
 *   P p:<sp>:r          list   the spine: block digests in conversation order
 *   P p:<sp>:c          list   cumulative item bytes after each slot
 *   P p:<sp>:s          hash   item id → slot
 *   P p:<sp>:u          zset   the spine's snapshots (sn) by their end
 *   P b:<scope>:<digest> hash  one immutable item block: j (JSON), n (bytes), r (references), i (item id)
 *   P seq, P tick       string serial and LRU counters
 *
 * Bytes (CACHE_BYTES, OWNER_BYTES) are counted exactly as memory-response-store.ts counts them:
 * blockBytes + meta + 8 per spine slot + 16 per snapshot. A spine's length is always its users'
 * largest end, so removing the tip user frees the tail and its block references.
 *
 * Every script takes ARGV[1] = P and ARGV[2] = now in ms (negative: Redis's own clock, shared by
 * all replicas). Only standalone Redis (or a primary) is supported: the scripts touch keys they
 * compute, which Redis Cluster forbids.
 */

const COMMON = `
local P = ARGV[1]
local NOW = tonumber(ARGV[2])
if NOW < 0 then
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local REF_BYTES, SNAPSHOT_REF_BYTES = 8, 16

local function count(scope, field, delta)
  if delta == 0 then return end
  redis.call('HINCRBY', P .. 'g', field, delta)
  redis.call('HINCRBY', P .. 's:' .. scope, field, delta)
end

local function bytesOf(key)
  local v = redis.call('HMGET', key, 'blockBytes', 'meta', 'refs', 'entries')
  return (tonumber(v[1]) or 0) + (tonumber(v[2]) or 0) + (tonumber(v[3]) or 0) * REF_BYTES + (tonumber(v[4]) or 0) * SNAPSHOT_REF_BYTES
end

local function entriesOf(key)
  return tonumber(redis.call('HGET', key, 'entries')) or 0
end

local function blockKey(scope, digest)
  return P .. 'b:' .. scope .. ':' .. digest
end

local function acquireBlock(scope, digest, json, bytes, itemId)
  local key = blockKey(scope, digest)
  if redis.call('HINCRBY', key, 'r', 1) == 1 then
    redis.call('HSET', key, 'j', json, 'n', bytes, 'i', itemId)
    count(scope, 'blockBytes', bytes)
    count(scope, 'blocks', 1)
  end
end

local function releaseBlock(scope, digest)
  local key = blockKey(scope, digest)
  if redis.call('HINCRBY', key, 'r', -1) <= 0 then
    local bytes = tonumber(redis.call('HGET', key, 'n')) or 0
    redis.call('DEL', key)
    count(scope, 'blockBytes', -bytes)
    count(scope, 'blocks', -1)
  end
end

local function spineKey(sp, part)
  return P .. 'p:' .. sp .. ':' .. part
end

local function spineLength(sp)
  return redis.call('LLEN', spineKey(sp, 'r'))
end

local function bytesBefore(sp, e)
  if e <= 0 then return 0 end
  return tonumber(redis.call('LINDEX', spineKey(sp, 'c'), e - 1)) or 0
end

local function appendSlot(scope, sp, digest, bytes, itemId)
  local length = spineLength(sp)
  redis.call('RPUSH', spineKey(sp, 'c'), bytesBefore(sp, length) + bytes)
  redis.call('RPUSH', spineKey(sp, 'r'), digest)
  redis.call('HSET', spineKey(sp, 's'), itemId, length)
  count(scope, 'refs', 1)
end

local function truncate(scope, sp, keep)
  for _ = spineLength(sp) - 1, keep, -1 do
    local digest = redis.call('RPOP', spineKey(sp, 'r'))
    redis.call('RPOP', spineKey(sp, 'c'))
    local itemId = redis.call('HGET', blockKey(scope, digest), 'i')
    if itemId then redis.call('HDEL', spineKey(sp, 's'), itemId) end
    releaseBlock(scope, digest)
    count(scope, 'refs', -1)
  end
end

local function removeSnapshot(sn)
  local key = P .. 'n:' .. sn
  local f = redis.call('HMGET', key, 'scope', 'id', 'mb', 'sp', 'e')
  if not f[1] then return end
  local scope, id, mb, sp, e = f[1], f[2], tonumber(f[3]), f[4], tonumber(f[5])
  if redis.call('HGET', P .. 'i:' .. scope, id) == sn then redis.call('HDEL', P .. 'i:' .. scope, id) end
  redis.call('ZREM', P .. 'lru', sn)
  redis.call('ZREM', P .. 'lru:' .. scope, sn)
  redis.call('ZREM', P .. 'exp', sn)
  redis.call('ZREM', spineKey(sp, 'u'), sn)
  count(scope, 'entries', -1)
  count(scope, 'meta', -mb)
  if e == spineLength(sp) then
    local top = redis.call('ZREVRANGE', spineKey(sp, 'u'), 0, 0, 'WITHSCORES')
    truncate(scope, sp, tonumber(top[2]) or 0)
  end
  redis.call('DEL', key)
  if entriesOf(P .. 's:' .. scope) <= 0 then redis.call('DEL', P .. 's:' .. scope) end
end

local function sweep()
  local expired = redis.call('ZRANGEBYSCORE', P .. 'exp', '-inf', NOW)
  for _, sn in ipairs(expired) do removeSnapshot(sn) end
  return #expired
end

local function lookup(scope, id)
  local sn = redis.call('HGET', P .. 'i:' .. scope, id)
  if not sn then return nil end
  local tick = redis.call('INCR', P .. 'tick')
  redis.call('ZADD', P .. 'lru', tick, sn)
  redis.call('ZADD', P .. 'lru:' .. scope, tick, sn)
  return sn
end
`;

/**
 * put. ARGV: P, now, scope, id, meta, metaBytes, previousId ('' = none), replay ('1' when the
 * items start with the continued history because its snapshot is gone), ttlMs, ENTRY_BYTES,
 * CACHE_BYTES, OWNER_BYTES, CACHE_ENTRIES, OWNER_ENTRIES, numInput, numOutput, then per item
 * (input side first): digest, bytes, id, json.
 * Reply: {'ok', expirations, evictions} | {'replay', expirations} (previous snapshot gone: send
 * its items) | {'too_large', expirations, evictions, expandedBytes, limit} (limit -1: did not fit
 * after eviction) | {'duplicate', expirations, itemId}.
 */
const PUT = `${COMMON}
local expirations = sweep()
local scope, id, meta, mb, prev = ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
local isReplay, ttl = ARGV[8] == '1', tonumber(ARGV[9])
local ENTRY, CACHE_BYTES, OWNER_BYTES = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local CACHE_ENTRIES, OWNER_ENTRIES = tonumber(ARGV[13]), tonumber(ARGV[14])
local numIn, numOut = tonumber(ARGV[15]), tonumber(ARGV[16])
local FIRST = 17
local numItems = numIn + numOut

local baseSp, baseEnd = nil, 0
if prev ~= '' and not isReplay then
  local baseSn = redis.call('HGET', P .. 'i:' .. scope, prev)
  if not baseSn then return {'replay', expirations} end
  local f = redis.call('HMGET', P .. 'n:' .. baseSn, 'sp', 'e')
  baseSp, baseEnd = f[1], tonumber(f[2])
end

local expanded = mb + bytesBefore(baseSp or '', baseSp and baseEnd or 0)
for i = 0, numItems - 1 do expanded = expanded + tonumber(ARGV[FIRST + i * 4 + 1]) end
local limit = math.min(ENTRY, CACHE_BYTES)
if OWNER_BYTES > 0 then limit = math.min(limit, OWNER_BYTES) end
if expanded > limit then return {'too_large', expirations, 0, expanded, limit} end

local seen = {}
for i = 0, numItems - 1 do
  local itemId = ARGV[FIRST + i * 4 + 2]
  if seen[itemId] then return {'duplicate', expirations, itemId} end
  seen[itemId] = true
  if baseSp then
    local slot = redis.call('HGET', spineKey(baseSp, 's'), itemId)
    if slot and tonumber(slot) < baseEnd then return {'duplicate', expirations, itemId} end
  end
end

local sp = baseSp
if not baseSp or spineLength(baseSp) ~= baseEnd then
  sp = tostring(redis.call('INCR', P .. 'seq'))
  if baseSp then
    for _, digest in ipairs(redis.call('LRANGE', spineKey(baseSp, 'r'), 0, baseEnd - 1)) do
      redis.call('HINCRBY', blockKey(scope, digest), 'r', 1)
      local block = redis.call('HMGET', blockKey(scope, digest), 'n', 'i')
      appendSlot(scope, sp, digest, tonumber(block[1]), block[2])
    end
  end
end
for i = 0, numItems - 1 do
  local at = FIRST + i * 4
  local digest, bytes, itemId, json = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2], ARGV[at + 3]
  acquireBlock(scope, digest, json, bytes, itemId)
  appendSlot(scope, sp, digest, bytes, itemId)
end
local e = baseEnd + numItems
local ie = e - numOut

local replaced = redis.call('HGET', P .. 'i:' .. scope, id)
local sn = tostring(redis.call('INCR', P .. 'seq'))
redis.call('HSET', P .. 'n:' .. sn, 'scope', scope, 'id', id, 'meta', meta, 'mb', mb, 'sp', sp, 'ie', ie, 'e', e, 'x', NOW + ttl)
redis.call('ZADD', spineKey(sp, 'u'), e, sn)
redis.call('HSET', P .. 'i:' .. scope, id, sn)
local tick = redis.call('INCR', P .. 'tick')
redis.call('ZADD', P .. 'lru', tick, sn)
redis.call('ZADD', P .. 'lru:' .. scope, tick, sn)
redis.call('ZADD', P .. 'exp', NOW + ttl, sn)
count(scope, 'entries', 1)
count(scope, 'meta', mb)
if replaced then removeSnapshot(replaced) end

local scopeKey = P .. 's:' .. scope
local function isOwnerOver()
  return (OWNER_ENTRIES > 0 and entriesOf(scopeKey) > OWNER_ENTRIES) or (OWNER_BYTES > 0 and bytesOf(scopeKey) > OWNER_BYTES)
end
local function isGlobalOver()
  return entriesOf(P .. 'g') > CACHE_ENTRIES or bytesOf(P .. 'g') > CACHE_BYTES
end
local evictions = 0
local function evictWhile(isOver, lru)
  while isOver() do
    local oldest = redis.call('ZRANGE', lru, 0, 1)
    local victim = oldest[1]
    if victim == sn then victim = oldest[2] end
    if not victim then return end
    removeSnapshot(victim)
    evictions = evictions + 1
  end
end
evictWhile(isOwnerOver, P .. 'lru:' .. scope)
evictWhile(isGlobalOver, P .. 'lru')
if isOwnerOver() or isGlobalOver() then
  removeSnapshot(sn)
  return {'too_large', expirations, evictions, expanded, -1}
end
return {'ok', expirations, evictions}
`;

/**
 * get / history / list. ARGV: P, now, scope, id, mode, then for 'list': order, limit (clamped to
 * 1..100 for the fetch; the caller validates), hasAfter ('1' or '0'), after.
 * Reply: {'miss', expirations} or
 *   get:     {'hit', expirations, meta, outputJsons}
 *   history: {'hit', expirations, expandedItemBytes, itemJsons}
 *   list:    {'hit', expirations, inputCount, cursorSlot (-1 none, -2 unknown), firstSlot, jsons (ascending slots)}
 * Cost: O(returned items) plus one LRANGE over the spine.
 */
const READ = `${COMMON}
local expirations = sweep()
local scope, id, mode = ARGV[3], ARGV[4], ARGV[5]
local sn = lookup(scope, id)
if not sn then return {'miss', expirations} end
local f = redis.call('HMGET', P .. 'n:' .. sn, 'meta', 'sp', 'ie', 'e')
local sp, ie, e = f[2], tonumber(f[3]), tonumber(f[4])
local function jsons(from, to)
  local out = {}
  if to <= from then return out end
  for i, digest in ipairs(redis.call('LRANGE', spineKey(sp, 'r'), from, to - 1)) do
    out[i] = redis.call('HGET', blockKey(scope, digest), 'j')
  end
  return out
end
if mode == 'get' then return {'hit', expirations, f[1], jsons(ie, e)} end
if mode == 'history' then return {'hit', expirations, bytesBefore(sp, e), jsons(0, e)} end
local order, limit, hasAfter, after = ARGV[6], math.max(1, math.min(100, math.floor(tonumber(ARGV[7]) or 20))), ARGV[8] == '1', ARGV[9]
local step, index = 1, 0
if order == 'desc' then step, index = -1, ie - 1 end
local cursor = -1
if hasAfter then
  local slot = tonumber(redis.call('HGET', spineKey(sp, 's'), after))
  if not slot or slot >= ie then return {'hit', expirations, ie, -2, 0, {}} end
  cursor = slot
  index = slot + step
end
local last = index + step * (limit - 1)
local lo, hi = math.max(0, math.min(index, last)), math.min(ie - 1, math.max(index, last))
return {'hit', expirations, ie, cursor, lo, jsons(lo, hi + 1)}
`;

/** delete. ARGV: P, now, scope, id. Reply: {deleted 0|1, expirations}. */
const DELETE = `${COMMON}
local expirations = sweep()
local sn = redis.call('HGET', P .. 'i:' .. ARGV[3], ARGV[4])
if not sn then return {0, expirations} end
removeSnapshot(sn)
return {1, expirations}
`;

/** stats. ARGV: P, now. Reply: {expirations, entries, blockBytes, meta, refs, blocks}. */
const STATS = `${COMMON}
local expirations = sweep()
local v = redis.call('HMGET', P .. 'g', 'entries', 'blockBytes', 'meta', 'refs', 'blocks')
return {expirations, tonumber(v[1]) or 0, tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4]) or 0, tonumber(v[5]) or 0}
`;

export const RESPONSE_STORE_SCRIPTS = {
  mayaStorePut: PUT,
  mayaStoreRead: READ,
  mayaStoreDelete: DELETE,
  mayaStoreStats: STATS,
} as const;
