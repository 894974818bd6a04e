import { describe, expect, it } from 'vitest';
import type { ApiError } from '../../../contract/errors.ts';
import { JobEventBuffer, eventBytes, type JobEvent } from '../../../store/jobs/job-event-buffer.ts';
import { checkCursor } from '../../../store/jobs/job-rules.ts';

const event = (n: number, text = ''): JobEvent => ({
  type: 'response.output_text.delta',
  sequence_number: n,
  delta: text,
});
const gone = () => new Error('gone');

async function take(iterator: AsyncIterator<JobEvent>, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((await iterator.next()).value!.sequence_number);
  return out;
}

describe('JobEventBuffer', () => {
  it('slides by count and reports cursors behind the window as gone, never skipping', () => {
    const buffer = new JobEventBuffer(3, 1 << 20);
    for (let n = 0; n < 5; n++) buffer.append(event(n));
    expect(buffer.count).toBe(3);
    expect(buffer.droppedThrough).toBe(1);
    const window = { last: buffer.lastSequence, dropped: buffer.droppedThrough };
    const code = (after: number) => {
      try {
        checkCursor('resp_1', after, window);
        return 'ok';
      } catch (error) {
        return (error as ApiError).code;
      }
    };
    expect(code(-1)).toBe('events_expired');
    expect(code(0)).toBe('events_expired');
    expect(code(1)).toBe('ok');
    expect(code(4)).toBe('ok');
    expect(code(5)).toBe('invalid_cursor');
  });

  it('slides by serialised bytes and refuses an event larger than the whole buffer', () => {
    const one = eventBytes(event(0, 'x'.repeat(100)));
    const buffer = new JobEventBuffer(100, one * 2);
    buffer.append(event(0, 'x'.repeat(100)));
    buffer.append(event(1, 'x'.repeat(100)));
    buffer.append(event(2, 'x'.repeat(100)));
    expect(buffer.count).toBe(2);
    expect(buffer.bytes).toBe(one * 2);
    expect(buffer.append(event(3, 'x'.repeat(one * 2)))).toBe(false);
    expect(buffer.lastSequence).toBe(2);
  });

  it('follows live events until closed, and ends a reader on abort', async () => {
    const buffer = new JobEventBuffer(10, 1 << 20);
    buffer.append(event(0));
    const reader = buffer.read(-1, gone)[Symbol.asyncIterator]();
    expect(await take(reader, 1)).toEqual([0]);
    const pending = take(reader, 2);
    buffer.append(event(1));
    buffer.append(event(2));
    expect(await pending).toEqual([1, 2]);
    const last = reader.next();
    buffer.close();
    expect((await last).done).toBe(true);

    const open = new JobEventBuffer(10, 1 << 20);
    const controller = new AbortController();
    const waiting = open.read(-1, gone, controller.signal)[Symbol.asyncIterator]().next();
    controller.abort();
    expect((await waiting).done).toBe(true);
  });

  it('throws the gone error to a connected reader the window slid past', async () => {
    const buffer = new JobEventBuffer(2, 1 << 20);
    buffer.append(event(0));
    const reader = buffer.read(-1, gone)[Symbol.asyncIterator]();
    expect(await take(reader, 1)).toEqual([0]);
    for (let n = 1; n < 5; n++) buffer.append(event(n));
    await expect(reader.next()).rejects.toThrow('gone');
  });
});
