/**
 * The storage units of the in-memory store. A Block is one item serialised once as JSON,
 * immutable and content-addressed within a credential scope (BlockTable: JSON text → block,
 * reference-counted). A Spine is an append-only flat list of block references shared by the
 * snapshots of one conversation chain: a snapshot is the prefix `blocks[0..end)`, so listing,
 * paging and history never walk parents. Continuing the spine's last snapshot appends to the
 * same spine; continuing an earlier one (a branch) copies the prefix into a new spine.
 */
import type { StoredItem } from './response-store.ts';

/** Accounted size of one spine slot (a block reference). */
export const REF_BYTES = 8;

export interface Block {
  /** The item's JSON text; also its content address. */
  readonly json: string;
  readonly id: string;
  /** UTF-8 length of `json`. */
  readonly bytes: number;
  /** Spine slots referring to this block. */
  refs: number;
}

export interface SerialisedItem {
  readonly json: string;
  readonly id: string;
  readonly bytes: number;
}

export function serialiseItem(item: StoredItem): SerialisedItem {
  const json = JSON.stringify(item);
  return { json, id: item.id, bytes: Buffer.byteLength(json, 'utf8') };
}

/** One scope's blocks. `bytes` = the sum of the live blocks' serialised sizes. */
export class BlockTable {
  private readonly byContent = new Map<string, Block>();
  bytes = 0;

  get size(): number {
    return this.byContent.size;
  }

  /** The block holding `item`'s content, created on first use; takes one reference. */
  acquire(item: SerialisedItem): Block {
    let block = this.byContent.get(item.json);
    if (!block) {
      block = { json: item.json, id: item.id, bytes: item.bytes, refs: 0 };
      this.byContent.set(item.json, block);
      this.bytes += block.bytes;
    }
    block.refs++;
    return block;
  }

  retain(block: Block): void {
    block.refs++;
  }

  release(block: Block): void {
    if (--block.refs > 0) return;
    this.byContent.delete(block.json);
    this.bytes -= block.bytes;
  }
}

/** A shared reference list. `users` are the snapshots whose prefix lives on this spine. */
export class Spine<User = unknown> {
  private readonly blocks: Block[] = [];
  /** cumBytes[i] = serialised bytes of blocks[0..i). */
  private readonly cumBytes: number[] = [0];
  /** Item id → slot; ids are unique on a spine (the store rejects duplicates). */
  private readonly slotById = new Map<string, number>();
  readonly users = new Set<User>();

  get length(): number {
    return this.blocks.length;
  }

  /** Serialised item bytes of the prefix [0, end). */
  bytesBefore(end: number): number {
    return this.cumBytes[end] ?? 0;
  }

  /** The slot of item `id` if it lies in [0, end). */
  slotOf(id: string, end: number): number | undefined {
    const slot = this.slotById.get(id);
    return slot !== undefined && slot < end ? slot : undefined;
  }

  at(slot: number): Block {
    const block = this.blocks[slot];
    if (!block) throw new RangeError(`spine slot ${slot} out of range`);
    return block;
  }

  /** Appends a block whose reference the caller has already taken. */
  append(block: Block): void {
    this.slotById.set(block.id, this.blocks.length);
    this.blocks.push(block);
    this.cumBytes.push(this.bytesBefore(this.blocks.length - 1) + block.bytes);
  }

  /** A new spine holding [0, end) of this one; takes a reference on each block. */
  copyPrefix(end: number, table: BlockTable): Spine<User> {
    const copy = new Spine<User>();
    for (let slot = 0; slot < end; slot++) {
      const block = this.at(slot);
      table.retain(block);
      copy.append(block);
    }
    return copy;
  }

  /** Drops slots [end, length) and their references; returns the number of slots dropped. */
  truncate(end: number, table: BlockTable): number {
    const dropped = this.blocks.length - end;
    while (this.blocks.length > end) {
      const block = this.blocks.pop() as Block;
      this.cumBytes.pop();
      this.slotById.delete(block.id);
      table.release(block);
    }
    return Math.max(0, dropped);
  }
}
