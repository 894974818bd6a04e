import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  createRedisClient,
  openRedis,
  redactUrl,
  StoreConnectError,
  storeFailure,
} from '../../../store/redis/redis-connection.ts';
import { StoreError } from '../../../store/responses/response-store.ts';
import { freePort } from '../../helpers/loopback.ts';

describe('redis connection', () => {
  it('redacts user and password from URLs', () => {
    expect(redactUrl('redis://user:secret@cache.internal:6380/2')).toBe('redis://cache.internal:6380/2');
    expect(redactUrl('rediss://:secret@host')).toBe('rediss://host');
    expect(redactUrl('not a url')).not.toContain('not a url');
    expect(redactUrl('redis+sentinel://:pw@h1:26379,h2:26380/main/1?sentinel_password=sp')).toBe(
      'redis+sentinel://h1:26379,h2:26380/main/1',
    );
    // An unescaped / or @ in a password still never shows.
    expect(redactUrl('redis://:p/w@d@host:6379')).toBe('redis://host:6379');
  });

  it('a lost or refusing Redis is store_unavailable (503, Retry-After: 1); a script error stays a 500', () => {
    for (const error of [
      new Error('Connection is closed.'),
      new Error('Command timed out'),
      new (ReplyError as new (m: string) => Error)('LOADING Redis is loading'),
      // A primary demoted by a failover, and one refusing writes without its replicas (Redis 7.0's texts).
      new (ReplyError as new (m: string) => Error)(
        "READONLY You can't write against a read only replica. script: 41d0, on @user_script:1.",
      ),
      new (ReplyError as new (m: string) => Error)('NOREPLICAS Not enough good replicas to write.'),
    ]) {
      const mapped = storeFailure(error) as StoreError;
      expect(mapped).toBeInstanceOf(StoreError);
      expect([mapped.status, mapped.code, mapped.headers['retry-after']]).toEqual([503, 'store_unavailable', '1']);
    }
    const bug = new (ReplyError as new (m: string) => Error)(
      'ERR user_script:1: Script attempted to access nonexistent global variable',
    );
    expect(storeFailure(bug)).toBe(bug);
  });

  it('openRedis fails fast with StoreConnectError naming the redacted URL', async () => {
    const url = `redis://:pw@127.0.0.1:${await freePort()}`;
    const client = createRedisClient(url);
    const started = Date.now();
    const error = await openRedis(client, url).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(StoreConnectError);
    expect((error as Error).message).toMatch(
      /^cannot reach the response store at redis:\/\/127\.0\.0\.1:\d+ \(MAYA_STORE_URL\)/,
    );
    expect((error as Error).message).not.toContain('pw');
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});
