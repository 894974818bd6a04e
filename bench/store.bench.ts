/**
 * `npm run bench:store`: the response store's three figures from issue 6, medians of RUNS runs.
 *  (a) a 200-turn previous_response_id chain: stored bytes ÷ unique content bytes, against a
 *      store that copies each snapshot's whole history (turns 10/50/100/200);
 *  (b) input_items page latency at turn 200 ÷ at turn 10 (first page and a cursor page);
 *  (c) store (continuation put) and retrieve (get) operations per second.
 * In-process, no network; prints a table. Exits 1 when a target (≤ 1.2, ≤ 2) is missed.
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_RESPONSES_SETTINGS } from '../config/settings.ts';
import { MemoryResponseStore } from '../store/responses/memory-response-store.ts';
import type { StoredItem, StoredResponse } from '../store/responses/response-store.ts';
import { assistantMessage, responseObject, userMessage } from '../test/store/responses/store-fixtures.ts';

const RUNS = 5;
const TURNS = 200;
const CHECKPOINTS = [10, 50, 100, 200];
const SCOPE = 'bench';
const PAGE = 10;
const settings = { ...DEFAULT_RESPONSES_SETTINGS, CACHE_ENTRIES: 100_000, CACHE_BYTES: 1 << 30 };

interface Turn {
  id: string;
  input: StoredItem[];
  response: StoredResponse;
}

/** Deterministic prose of roughly `length` characters. */
function prose(seed: number, length: number): string {
  const words = [
    'value',
    'remember',
    'the',
    'store',
    'chain',
    'of',
    'turns',
    'history',
    'model',
    'answer',
    'given',
    'seventy',
  ];
  let text = '';
  for (let n = seed; text.length < length; n = (n * 1103515245 + 12345) % 2147483648)
    text += `${words[n % words.length]} `;
  return text;
}

function makeTurn(n: number): Turn {
  const id = `resp_${String(n).padStart(4, '0')}`;
  const output = [assistantMessage(`msg_out_${n}`, prose(n * 7 + 1, 600))];
  return { id, input: [userMessage(`msg_in_${n}`, prose(n * 13 + 5, 200))], response: responseObject(id, output) };
}

const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

async function buildChain(
  store: MemoryResponseStore,
  turns: Turn[],
  onTurn?: (n: number) => Promise<void>,
): Promise<void> {
  for (let n = 0; n < turns.length; n++) {
    const turn = turns[n] as Turn;
    const previous = n === 0 ? undefined : await store.history(SCOPE, (turns[n - 1] as Turn).id);
    await store.put(SCOPE, { response: turn.response, inputItems: turn.input, previous });
    previous?.release();
    await onTurn?.(n + 1);
  }
}

/** (a) Bytes at each checkpoint: shared-block store, copy-each-history store, unique content. */
async function storageCurve(turns: Turn[]): Promise<Map<number, { shared: number; naive: number; unique: number }>> {
  const store = new MemoryResponseStore({ settings });
  const curve = new Map<number, { shared: number; naive: number; unique: number }>();
  let unique = 0;
  let naive = 0;
  let historyBytes = 0;
  await buildChain(store, turns, async (count) => {
    const turn = turns[count - 1] as Turn;
    const meta = bytesOf({ ...turn.response, output: [] });
    const ownItems = bytesOf(turn.input[0]) + bytesOf(turn.response.output[0]);
    unique += ownItems + meta;
    historyBytes += ownItems;
    naive += historyBytes + meta;
    if (CHECKPOINTS.includes(count)) curve.set(count, { shared: (await store.stats()).bytes, naive, unique });
  });
  return curve;
}

/** Microseconds per call of `op`, after a warm-up. */
async function perCall(iterations: number, op: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 200; i++) await op();
  const start = performance.now();
  for (let i = 0; i < iterations; i++) await op();
  return ((performance.now() - start) * 1000) / iterations;
}

/** (b) Page latency at turn `at` of a chain: first page and a page after a cursor mid-history. */
async function pageLatency(turns: Turn[], at: number): Promise<{ first: number; cursor: number }> {
  const store = new MemoryResponseStore({ settings });
  await buildChain(store, turns.slice(0, at));
  const id = (turns[at - 1] as Turn).id;
  // Both pages hold PAGE items at every turn, so the ratio compares equal work.
  const cursor = `msg_in_${Math.floor(at / 2) - 5}`;
  const first = await perCall(5_000, () => store.listInputItems(SCOPE, id, { limit: PAGE }));
  const after = await perCall(5_000, () =>
    store.listInputItems(SCOPE, id, { limit: PAGE, order: 'asc', after: cursor }),
  );
  return { first, cursor: after };
}

/**
 * (c) Per second: continuation puts (history + put + release, decoding the whole history each
 * turn), standalone puts (no previous_response_id) and gets.
 */
async function throughput(turns: Turn[]): Promise<{ chained: number; single: number; gets: number }> {
  const store = new MemoryResponseStore({ settings });
  const start = performance.now();
  await buildChain(store, turns);
  const chained = turns.length / ((performance.now() - start) / 1000);
  const ids = turns.map((turn) => turn.id);
  let i = 0;
  const getUs = await perCall(20_000, () => store.get(SCOPE, ids[i++ % ids.length] as string));
  const other = new MemoryResponseStore({ settings });
  let j = 0;
  const putUs = await perCall(20_000, () => {
    const turn = turns[j++ % turns.length] as Turn;
    return other.put(SCOPE, { response: turn.response, inputItems: turn.input });
  });
  return { chained, single: 1e6 / putUs, gets: 1e6 / getUs };
}

async function main(): Promise<void> {
  const turns = Array.from({ length: TURNS }, (_, n) => makeTurn(n));
  const curve = await storageCurve(turns);
  console.log('(a) stored bytes ÷ unique content bytes, 200-turn previous_response_id chain');
  console.log('turn  unique_B   shared_B   shared/unique  copy-history_B  copy/unique');
  for (const [turn, row] of curve) {
    const cols = [String(turn).padEnd(5), String(row.unique).padEnd(10), String(row.shared).padEnd(10)];
    cols.push(
      (row.shared / row.unique).toFixed(3).padEnd(14),
      String(row.naive).padEnd(15),
      (row.naive / row.unique).toFixed(2),
    );
    console.log(cols.join(' '));
  }
  const ratio =
    (curve.get(TURNS) as { shared: number; unique: number }).shared / (curve.get(TURNS) as { unique: number }).unique;

  const firstRatios: number[] = [];
  const cursorRatios: number[] = [];
  const samples: string[] = [];
  const chained: number[] = [];
  const single: number[] = [];
  const gets: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const early = await pageLatency(turns, 10);
    const late = await pageLatency(turns, TURNS);
    firstRatios.push(late.first / early.first);
    cursorRatios.push(late.cursor / early.cursor);
    samples.push(`${early.first.toFixed(1)}/${late.first.toFixed(1)}`);
    const rate = await throughput(turns);
    chained.push(rate.chained);
    single.push(rate.single);
    gets.push(rate.gets);
  }
  const pageRatio = Math.max(median(firstRatios), median(cursorRatios));
  console.log(`\n(b) input_items page (limit ${PAGE}) latency, turn ${TURNS} ÷ turn 10, median of ${RUNS} runs`);
  console.log(
    `first page: ${median(firstRatios).toFixed(2)}   cursor page: ${median(cursorRatios).toFixed(2)}   (first page µs, turn 10/turn 200, per run: ${samples.join(', ')})`,
  );
  console.log(`\n(c) operations per second, median of ${RUNS} runs`);
  console.log(`store, continuing a ${TURNS}-turn chain (history + put + release): ${Math.round(median(chained))}/s`);
  console.log(`store, standalone response (put, replacing):              ${Math.round(median(single))}/s`);
  console.log(`retrieve (get):                                           ${Math.round(median(gets))}/s`);
  const isOk = ratio <= 1.2 && pageRatio <= 2;
  console.log(
    `\ntargets: bytes ratio ${ratio.toFixed(3)} ≤ 1.2, page ratio ${pageRatio.toFixed(2)} ≤ 2 → ${isOk ? 'met' : 'MISSED'}`,
  );
  if (!isOk) process.exitCode = 1;
}

await main();
