/** MAYA_MCP_* (config/mcp-settings.ts): the mcpServers file format, the defaults, and the errors naming the variable. */
import { describe, expect, it } from 'vitest';
import { loadMcpSettings, MCP_SETTING_NAMES } from '../../config/mcp-settings.ts';
import { SettingsError } from '../../config/settings.ts';

const file = (content: unknown) => () => JSON.stringify(content);
const load = (env: Record<string, string>, content: unknown = { mcpServers: {} }) =>
  loadMcpSettings(env, file(content));

describe('MAYA_MCP_* settings', () => {
  it('unset MAYA_MCP_CONFIG: no MCP servers', () => {
    expect(load({})).toBeUndefined();
  });

  it('reads stdio and Streamable HTTP servers with the defaults; disabled ones are left out', () => {
    const settings = load(
      { MAYA_MCP_CONFIG: 'mcp.json' },
      {
        mcpServers: {
          fs: { command: 'npx', args: ['-y', 'server'], env: { ROOT: '/srv' }, allowedTools: ['read_file'] },
          docs: { url: 'https://mcp.example/mcp', headers: { Authorization: 'Bearer x' } },
          old: { command: 'x', disabled: true },
        },
      },
    );
    expect(settings).toEqual({
      servers: [
        {
          name: 'fs',
          allowedTools: ['read_file'],
          transport: 'stdio',
          command: 'npx',
          args: ['-y', 'server'],
          env: { ROOT: '/srv' },
        },
        {
          name: 'docs',
          allowedTools: [],
          transport: 'http',
          url: 'https://mcp.example/mcp',
          headers: { Authorization: 'Bearer x' },
        },
      ],
      permission: 'read',
      maxRounds: 8,
      callTimeoutMs: 60_000,
      resultChars: 20_000,
    });
    expect(MCP_SETTING_NAMES).toEqual([
      'MAYA_MCP_CONFIG',
      'MAYA_MCP_PERMISSION',
      'MAYA_MCP_MAX_ROUNDS',
      'MAYA_MCP_CALL_TIMEOUT_S',
      'MAYA_MCP_RESULT_CHARS',
    ]);
  });

  it('the limits and the permission', () => {
    const settings = load({
      MAYA_MCP_CONFIG: 'mcp.json',
      MAYA_MCP_PERMISSION: 'full',
      MAYA_MCP_MAX_ROUNDS: '3',
      MAYA_MCP_CALL_TIMEOUT_S: '5',
      MAYA_MCP_RESULT_CHARS: '100',
    });
    expect(settings).toMatchObject({ permission: 'full', maxRounds: 3, callTimeoutMs: 5000, resultChars: 100 });
  });

  it.each([
    [{ MAYA_MCP_PERMISSION: 'ask' }, { mcpServers: {} }, 'MAYA_MCP_PERMISSION'],
    [{ MAYA_MCP_MAX_ROUNDS: '0' }, { mcpServers: {} }, 'MAYA_MCP_MAX_ROUNDS'],
    [{}, { servers: {} }, 'MAYA_MCP_CONFIG'],
    [{}, { mcpServers: { a__b: { command: 'x' } } }, 'MAYA_MCP_CONFIG'],
    [{}, { mcpServers: { a: { command: 'x', url: 'http://h/mcp' } } }, 'MAYA_MCP_CONFIG'],
    [{}, { mcpServers: { a: { url: 'ftp://h/mcp' } } }, 'MAYA_MCP_CONFIG'],
    [{}, { mcpServers: { a: { url: 'http://h/sse', type: 'sse' } } }, 'MAYA_MCP_CONFIG'],
    [{}, { mcpServers: { a: { args: ['x'] } } }, 'MAYA_MCP_CONFIG'],
    [{}, { mcpServers: { a: { command: 'x', env: { N: 1 } } } }, 'MAYA_MCP_CONFIG'],
  ])('%j %j is a SettingsError naming %s', (env, content, variable) => {
    const error = (() => {
      try {
        load({ MAYA_MCP_CONFIG: 'mcp.json', ...env }, content);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(SettingsError);
    expect((error as SettingsError).variable).toBe(variable);
  });

  it('an unreadable or non-JSON file names the variable and the path', () => {
    expect(() =>
      loadMcpSettings({ MAYA_MCP_CONFIG: '/nope.json' }, () => {
        throw Object.assign(new Error('x'), { code: 'ENOENT' });
      }),
    ).toThrow('MAYA_MCP_CONFIG: cannot read /nope.json (ENOENT)');
    expect(() => loadMcpSettings({ MAYA_MCP_CONFIG: 'm.json' }, () => '{')).toThrow(
      /MAYA_MCP_CONFIG: m.json is not valid JSON/,
    );
  });
});
