/**
 * Lua scripts of the shared background-task records (redis-job-mirror.ts). One script per change,
 * so a record's status, event log and terminal state move together on every replica.
 *
 *   P job:<id>      hash  scope, owner (replica id), status, snapshot (Response JSON), history
 *                         (input items JSON), last (newest sequence number), dropped (newest dropped
 *                         sequence number, -1 none), bytes (retained event bytes), done (0|1), cancel (0|1)
 *   P job:<id>:ev   list  retained event JSON, sequence numbers dropped+1 … last (consecutive)
 *   P job:<id>:eb   list  the byte size of each retained event
 *   P jobs:active   set   ids of tasks not yet done (the orphan sweep walks it)
 *   P replica:<rid> string a replica's lease, refreshed by its heartbeat (PX lease)
 *   P replicas      set   replica ids that may hold readers
 *   P readers:<rid> hash  one replica's stream readers: '*' → all, 'scope:<scope>' → that scope's
 *
 * ARGV[1] is always P and ARGV[2] the task id.
 */

const COMMON = `
local P, id = ARGV[1], ARGV[2]
local key = P .. 'job:' .. id
local function append(json, bytes, seq, maxCount, maxBytes)
  redis.call('RPUSH', key .. ':ev', json)
  redis.call('RPUSH', key .. ':eb', bytes)
  local total = redis.call('HINCRBY', key, 'bytes', bytes)
  redis.call('HSET', key, 'last', seq)
  while redis.call('LLEN', key .. ':ev') > maxCount or total > maxBytes do
    redis.call('LPOP', key .. ':ev')
    total = redis.call('HINCRBY', key, 'bytes', -tonumber(redis.call('LPOP', key .. ':eb')))
    redis.call('HINCRBY', key, 'dropped', 1)
  end
end
-- Appends the events of ARGV[from..] (triples seq, json, bytes) that continue the log: a number
-- at or below 'last' is already there (skipped); one past last + 1 is a gap (stop). Returns
-- {'ok'|'gap'|'done'|'missing', last}.
local function appendAll(from, maxCount, maxBytes)
  local state = redis.call('HMGET', key, 'done', 'last')
  if not state[1] then return {'missing', -1} end
  local last = tonumber(state[2])
  if state[1] ~= '0' then return {'done', last} end
  for i = from, #ARGV, 3 do
    local seq = tonumber(ARGV[i])
    if seq > last + 1 then return {'gap', last} end
    if seq == last + 1 then
      append(ARGV[i + 1], tonumber(ARGV[i + 2]), seq, maxCount, maxBytes)
      last = seq
    end
  end
  return {'ok', last}
end
local function finish(status, snapshot, ttlMs)
  redis.call('HSET', key, 'status', status, 'snapshot', snapshot, 'done', 1)
  redis.call('SREM', P .. 'jobs:active', id)
  for _, k in ipairs({key, key .. ':ev', key .. ':eb'}) do redis.call('PEXPIRE', k, ttlMs) end
end
`;

/**
 * ARGV: P, id, scope, owner, snapshot, history, status[, dropped]. Creates the record with no
 * events; `dropped` (default -1) is the newest event the owner no longer holds, when it re-admits
 * a record Redis lost (the log then continues after it).
 */
const ADMIT = `${COMMON}
local dropped = ARGV[8] or -1
redis.call('DEL', key, key .. ':ev', key .. ':eb')
redis.call('HSET', key, 'scope', ARGV[3], 'owner', ARGV[4], 'snapshot', ARGV[5], 'history', ARGV[6], 'status', ARGV[7],
  'last', dropped, 'dropped', dropped, 'bytes', 0, 'done', 0, 'cancel', 0)
redis.call('SADD', P .. 'jobs:active', id)
return 1
`;

/**
 * ARGV: P, id, maxCount, maxBytes, then (seq, json, bytes) per event, in order. The log only ever
 * grows by the next number, so an event lost on the way (a failed or unreplicated write) is a gap
 * the owner fills from its own buffer, never a hole readers skip. Reply: appendAll's.
 */
const APPEND = `${COMMON}
return appendAll(5, tonumber(ARGV[3]), tonumber(ARGV[4]))
`;

/** ARGV: P, id, status, snapshot. Updates an active record. */
const STATUS = `${COMMON}
if redis.call('HGET', key, 'done') ~= '0' then return 0 end
redis.call('HSET', key, 'status', ARGV[3], 'snapshot', ARGV[4])
return 1
`;

/**
 * ARGV: P, id, status, snapshot, ttlMs, maxCount, maxBytes, lastSeq, then the events the log may
 * still miss (as APPEND). Appends them, then ends the active record, only when its log then ends
 * at lastSeq (the task's own last event); otherwise nothing ends and the reply is a gap, with the
 * log's last number. Reply: appendAll's ('done' = it had ended already: finished or failed by
 * another replica).
 */
const FINISH = `${COMMON}
local reply = appendAll(9, tonumber(ARGV[6]), tonumber(ARGV[7]))
if reply[1] ~= 'ok' then return reply end
if reply[2] < tonumber(ARGV[8]) then return {'gap', reply[2]} end
finish(ARGV[3], ARGV[4], tonumber(ARGV[5]))
return reply
`;

/**
 * ARGV: P, id, expectedLast, snapshot, eventJson, eventBytes, maxCount, maxBytes, ttlMs. Fails a
 * task whose owner's lease is gone: only while it is still active, its owner still has no lease
 * and no event arrived since the caller read it. 1 when failed here.
 */
const FAIL_ORPHAN = `${COMMON}
local state = redis.call('HMGET', key, 'done', 'owner', 'last')
if state[1] ~= '0' then return 0 end
if redis.call('EXISTS', P .. 'replica:' .. state[2]) == 1 then return 0 end
if state[3] ~= ARGV[3] then return 0 end
append(ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[3]) + 1, tonumber(ARGV[7]), tonumber(ARGV[8]))
finish('failed', ARGV[4], tonumber(ARGV[9]))
return 1
`;

/**
 * ARGV: P, id, after. The record's state and its retained events strictly after `after`:
 * {scope, owner, status, snapshot, last, dropped, done, cancel, ownerAlive, events}, or {} when gone.
 */
const READ = `${COMMON}
local f = redis.call('HMGET', key, 'scope', 'owner', 'status', 'snapshot', 'last', 'dropped', 'done', 'cancel')
if not f[1] then return {} end
local after, dropped = tonumber(ARGV[3]), tonumber(f[6])
local events = {}
if after >= dropped and after < tonumber(f[5]) then events = redis.call('LRANGE', key .. ':ev', after - dropped, -1) end
local alive = redis.call('EXISTS', P .. 'replica:' .. f[2])
return {f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], alive, events}
`;

/**
 * Stream reader admission counted across replicas. ARGV: P, rid, scope, delta (+1 acquire, -1
 * release), STREAM_READERS, STREAM_OWNER_READERS, leaseMs. Counts of replicas whose lease is gone
 * are dropped first. Reply: 'ok' | 'readers' | 'owner_readers'.
 */
const READER = `
local P, rid, scope, delta = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local mine, field = P .. 'readers:' .. rid, 'scope:' .. ARGV[3]
if delta < 0 then
  if (tonumber(redis.call('HGET', mine, '*')) or 0) > 0 then redis.call('HINCRBY', mine, '*', -1) end
  if (tonumber(redis.call('HGET', mine, field)) or 0) > 1 then redis.call('HINCRBY', mine, field, -1) else redis.call('HDEL', mine, field) end
  return 'ok'
end
local total, owned = 0, 0
for _, other in ipairs(redis.call('SMEMBERS', P .. 'replicas')) do
  if redis.call('EXISTS', P .. 'replica:' .. other) == 0 then
    redis.call('SREM', P .. 'replicas', other)
    redis.call('DEL', P .. 'readers:' .. other)
  else
    total = total + (tonumber(redis.call('HGET', P .. 'readers:' .. other, '*')) or 0)
    owned = owned + (tonumber(redis.call('HGET', P .. 'readers:' .. other, field)) or 0)
  end
end
if total >= tonumber(ARGV[5]) then return 'readers' end
if owned >= tonumber(ARGV[6]) then return 'owner_readers' end
redis.call('SADD', P .. 'replicas', rid)
redis.call('HINCRBY', mine, '*', 1)
redis.call('HINCRBY', mine, field, 1)
redis.call('PEXPIRE', mine, ARGV[7])
return 'ok'
`;

export const JOB_SCRIPTS = {
  mayaJobReader: READER,
  mayaJobAdmit: ADMIT,
  mayaJobAppend: APPEND,
  mayaJobStatus: STATUS,
  mayaJobFinish: FINISH,
  mayaJobFailOrphan: FAIL_ORPHAN,
  mayaJobRead: READ,
} as const;
