/**
 * MAYA_STORE_URL's two forms, parsed here and only here:
 *
 *   redis://[user:password@]host[:port][/db]       one Redis server (rediss:// for TLS)
 *   redis+sentinel://[user:password@]host[:port][,host[:port]...]/mastername[/db][?sentinel_password=…]
 *                                                  Redis Sentinel (rediss+sentinel:// for TLS to the
 *                                                  data nodes): the Sentinels name the current primary
 *                                                  of `mastername`, and are asked again after a failover
 *
 * The user name and password authenticate to the Redis primary; `sentinel_password` (optional) to
 * the Sentinels. Sentinel ports default to 26379. settings.ts turns a malformed value into a
 * SettingsError that never echoes the value (it may hold a password).
 */

export interface SentinelAddress {
  readonly host: string;
  readonly port: number;
}

export type StoreTarget =
  | { readonly kind: 'redis'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly SentinelAddress[];
      /** The Sentinel master group name. */
      readonly name: string;
      readonly db: number;
      readonly username?: string;
      readonly password?: string;
      readonly sentinelPassword?: string;
      /** rediss+sentinel://: TLS to the primary (the Sentinels are asked in clear). */
      readonly tls: boolean;
    };

export const DEFAULT_SENTINEL_PORT = 26379;

/** The rule a malformed value breaks, for the SettingsError. */
export const STORE_URL_RULE =
  'MAYA_STORE_URL: must be a redis://[user:password@]host[:port][/db] or rediss:// URL, or redis+sentinel://[user:password@]host[:port][,host[:port]...]/mastername[/db] (unset = in-memory store)';

/** One host in a Sentinel list: a name, an IPv4 address or a bracketed IPv6 address, then an optional port. */
const HOST = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/;

/** The target of a MAYA_STORE_URL value; undefined when it is malformed. */
export function parseStoreUrl(raw: string): StoreTarget | undefined {
  const text = raw.trim();
  const scheme = /^([a-z+]+):\/\//.exec(text)?.[1];
  if (scheme === 'redis' || scheme === 'rediss') {
    let isUrl = false;
    try {
      isUrl = new URL(text).host !== '';
    } catch {
      // reported below
    }
    if (isUrl) return { kind: 'redis', url: text };
  } else if (scheme === 'redis+sentinel' || scheme === 'rediss+sentinel') {
    const target = parseSentinelUrl(text.slice(scheme.length + 3), scheme === 'rediss+sentinel');
    return target;
  }
  return undefined;
}

function parseSentinelUrl(rest: string, tls: boolean): StoreTarget | undefined {
  const [beforeQuery = '', query = ''] = splitOnce(rest, '?');
  const [authority = '', path = ''] = splitOnce(beforeQuery, '/');
  const at = authority.lastIndexOf('@');
  const userInfo = at >= 0 ? authority.slice(0, at) : undefined;
  const hosts = (at >= 0 ? authority.slice(at + 1) : authority).split(',');
  const sentinels: SentinelAddress[] = [];
  for (const host of hosts) {
    const match = HOST.exec(host);
    if (!match) return undefined;
    const port = match[2] === undefined ? DEFAULT_SENTINEL_PORT : Number(match[2]);
    if (port < 1 || port > 65535) return undefined;
    sentinels.push({ host: match[1]!.replace(/^\[|\]$/g, ''), port });
  }
  const [name = '', dbText, ...extra] = path.split('/');
  if (!/^[A-Za-z0-9._-]+$/.test(name) || extra.length > 0) return undefined;
  if (dbText !== undefined && !/^\d{1,5}$/.test(dbText)) return undefined;
  const params = new URLSearchParams(query);
  if ([...params.keys()].some((key) => key !== 'sentinel_password')) return undefined;
  let username: string | undefined;
  let password: string | undefined;
  if (userInfo !== undefined) {
    const [user = '', pass] = splitOnce(userInfo, ':');
    try {
      username = user === '' ? undefined : decodeURIComponent(user);
      password = pass === undefined || pass === '' ? undefined : decodeURIComponent(pass);
    } catch {
      return undefined;
    }
  }
  const sentinelPassword = params.get('sentinel_password') ?? undefined;
  return {
    kind: 'sentinel',
    sentinels,
    name,
    db: dbText === undefined ? 0 : Number(dbText),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
    tls,
  };
}

function splitOnce(text: string, separator: string): [string, string?] {
  const index = text.indexOf(separator);
  return index < 0 ? [text] : [text.slice(0, index), text.slice(index + 1)];
}
