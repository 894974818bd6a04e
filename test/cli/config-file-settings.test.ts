/**
 * Every setting set only in a `--config FILE` env block takes effect, through the CLI's own
 * loading path (loadServeSettings: the file under the environment, flags over both, then
 * config/'s loaders). The engine's settings reach the parameters the engine is created with
 * (startService → the loader's options → ffi.ts's ENG_PARAM_* array), and end to end the engine
 * reports them: `maya generate --config` and `maya serve`'s runtime on the demo model. The order
 * flag > environment > file > default holds; legacy STRATA_ spellings work in the file too.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadServeSettings } from '../../cli/maya.ts';
import { runGenerate } from '../../cli/generate.ts';
import { startService, type LoadModelRuntime, type RunningService } from '../../cli/serve.ts';
import {
  RESPONSES_SETTINGS,
  SETTING_NAMES,
  type ResponsesSettings,
  type ServerSettings,
} from '../../config/settings.ts';
import { ENG, encodeParams } from '../../engine-cuda/ffi.ts';
import { silentLogger } from '../../handlers/logger.ts';
import { loadModelRuntime } from '../../runtime/load-model-runtime.ts';
import type { ModelRuntime } from '../../runtime/model-runtime.ts';
import { stubRuntime } from '../helpers/test-app.ts';

const ROOT = join(import.meta.dirname, '../..');
const DEMO = join(ROOT, 'models/maya-demo');
const BIN = fileURLToPath(new URL('../../bin/maya.js', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'maya-config-settings-'));
const KEY_HEX = 'ab'.repeat(32);

function configFile(env: Record<string, string>): string {
  const path = join(tmp, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify({ env }));
  return path;
}

/** `maya serve --config FILE` settings with nothing in the real environment. */
function fromFile(env: Record<string, string>): { settings: ResponsesSettings; server: ServerSettings } {
  return loadServeSettings({ config: configFile(env) }, {});
}

type Loaded = ReturnType<typeof fromFile>;
const MCP_CONFIG = join(tmp, 'mcp.json');
writeFileSync(MCP_CONFIG, JSON.stringify({ mcpServers: { files: { command: 'node', args: ['files.js'] } } }));
/** The MCP limits act only with servers configured: their cases set MAYA_MCP_CONFIG beside them. */
const WITH_SERVERS = { MAYA_MCP_CONFIG: MCP_CONFIG };
/** Each setting: a value other than its default, where that value shows after loading, and what it needs beside it. */
const CASES: Record<
  string,
  [value: string, read: (l: Loaded) => unknown, want: unknown, beside?: Record<string, string>]
> = {
  MAYA_MODEL: ['/models/x', (l) => l.server.model, '/models/x'],
  MAYA_HOST: ['::1', (l) => l.server.host, '::1'],
  MAYA_PORT: ['9000', (l) => l.server.port, 9000],
  MAYA_API_KEYS: ['k1,k2', (l) => l.server.apiKeys, ['k1', 'k2']],
  MAYA_CORS_ORIGINS: ['https://x.example', (l) => l.server.corsOrigins, ['https://x.example']],
  MAYA_MAX_BODY_BYTES: ['1024', (l) => l.server.maxBodyBytes, 1024],
  MAYA_LOG_LEVEL: ['warn', (l) => l.server.logLevel, 'warn'],
  MAYA_STORE_URL: ['redis://127.0.0.1:6390/1', (l) => l.server.storeUrl, 'redis://127.0.0.1:6390/1'],
  MAYA_STORE_WAIT_REPLICAS: ['2', (l) => l.server.storeWaitReplicas, 2],
  MAYA_DIALECT: ['glm47', (l) => l.server.dialect, 'glm47'],
  MAYA_CHAT_TEMPLATE: ['/t/chat_template.jinja', (l) => l.server.chatTemplate, '/t/chat_template.jinja'],
  MAYA_MAX_CONNECTIONS: ['64', (l) => l.server.limits?.MAX_CONNECTIONS, 64],
  MAYA_HEADERS_TIMEOUT_S: ['3', (l) => l.server.limits?.HEADERS_TIMEOUT_S, 3],
  MAYA_REQUEST_TIMEOUT_S: ['9', (l) => l.server.limits?.REQUEST_TIMEOUT_S, 9],
  MAYA_KEEPALIVE_TIMEOUT_S: ['2', (l) => l.server.limits?.KEEPALIVE_TIMEOUT_S, 2],
  MAYA_SHUTDOWN_GRACE_S: ['0', (l) => l.server.limits?.SHUTDOWN_GRACE_S, 0],
  MAYA_CONSTRAINED_DECODING: ['0', (l) => l.server.decoding?.constrained, false],
  MAYA_GRAMMAR_MAX_STRING: ['40', (l) => l.server.decoding?.maxString, 40],
  MAYA_GRAMMAR_MAX_ITEMS: ['0', (l) => l.server.decoding?.maxItems, 0],
  MAYA_IMAGE_URL_ALLOW: ['images.example.com', (l) => l.server.images?.urlAllow, ['images.example.com']],
  MAYA_IMAGE_MAX_BYTES: ['1000', (l) => l.server.images?.maxBytes, 1000],
  MAYA_IMAGE_MAX_PIXELS: ['4096', (l) => l.server.images?.maxPixels, 4096],
  MAYA_IMAGE_MAX_COUNT: ['2', (l) => l.server.images?.maxCount, 2],
  MAYA_IMAGE_FETCH_TIMEOUT_MS: ['250', (l) => l.server.images?.fetchTimeoutMs, 250],
  MAYA_IMAGE_MAX_REDIRECTS: ['0', (l) => l.server.images?.maxRedirects, 0],
  MAYA_WEIGHT_DTYPE: ['q8', (l) => l.server.weightDtype, 'q8'],
  MAYA_ENGINE_BACKEND: ['cpu', (l) => l.server.engine?.backend, 'cpu'],
  MAYA_ENGINE_SIMD: ['scalar', (l) => l.server.engine?.simd, 'scalar'],
  MAYA_ENGINE_KV_BYTES: ['8388608', (l) => l.server.engine?.kvBytes, 8388608],
  MAYA_KV_DTYPE: ['bf16', (l) => l.server.engine?.kvDtype, 'bf16'],
  MAYA_ENGINE_WEIGHT_COPY: ['0', (l) => l.server.engine?.weightCopy, false],
  MAYA_ENGINE_LIB: ['/opt/maya/libmaya_engine.so', (l) => l.server.engine?.libPath, '/opt/maya/libmaya_engine.so'],
  MAYA_ENGINE_CUDA_LIB: [
    '/opt/cuda/libmaya_engine_cuda.so',
    (l) => l.server.engine?.cudaLibPath,
    '/opt/cuda/libmaya_engine_cuda.so',
  ],
  MAYA_CUDA_DEVICE: ['3', (l) => l.server.engine?.cudaDevice, 3],
  MAYA_CUDA_TC_MIN_TOKENS: ['64', (l) => l.server.engine?.cudaTcMinTokens, 64],
  MAYA_CUDA_GRAPHS: ['0', (l) => l.server.engine?.cudaGraphs, false],
  MAYA_SPECULATIVE: ['off', (l) => l.server.engine?.speculative, 'off'],
  MAYA_SPECULATIVE_MAX_DRAFT: ['5', (l) => l.server.engine?.specMaxDraft, 5],
  MAYA_WEB: ['off', (l) => l.server.web, false],
  MAYA_MCP_CONFIG: [MCP_CONFIG, (l) => l.server.mcp?.servers.map((server) => server.name), ['files']],
  MAYA_MCP_PERMISSION: ['full', (l) => l.server.mcp?.permission, 'full', WITH_SERVERS],
  MAYA_MCP_MAX_ROUNDS: ['3', (l) => l.server.mcp?.maxRounds, 3, WITH_SERVERS],
  MAYA_MCP_CALL_TIMEOUT_S: ['5', (l) => l.server.mcp?.callTimeoutMs, 5000, WITH_SERVERS],
  MAYA_MCP_RESULT_CHARS: ['100', (l) => l.server.mcp?.resultChars, 100, WITH_SERVERS],
  MAYA_GLM_RESPONSES_MCP: ['on', (l) => l.server.optIns?.mcp, true],
  MAYA_GLM_RESPONSES_ITEM_REFERENCES: ['on', (l) => l.server.optIns?.itemReferences, true],
  MAYA_GLM_RESPONSES_ENCRYPTED_REASONING: ['on', (l) => l.server.optIns?.encryptedReasoning, true],
  MAYA_GLM_RESPONSES_REASONING_KEY: [
    KEY_HEX,
    (l) => Buffer.from(l.server.optIns?.reasoningKey ?? []).toString('hex'),
    KEY_HEX,
  ],
  ...Object.fromEntries(
    Object.entries(RESPONSES_SETTINGS).map(([name, rule]) => [
      `MAYA_GLM_RESPONSES_${name}`,
      [String(rule.default + 1), (l: Loaded) => l.settings[name as keyof ResponsesSettings], rule.default + 1],
    ]),
  ),
};

let service: RunningService | undefined;
afterEach(async () => {
  await service?.stop();
  service = undefined;
});

describe('a setting set only in a --config file', () => {
  it('every setting has a case here', () => {
    expect(Object.keys(CASES).sort()).toEqual([...SETTING_NAMES].sort());
  });

  it.each(Object.entries(CASES))(
    '%s takes effect, and GET /v1/status lists it (a secret hidden)',
    (name, [value, read, want, beside = {}]) => {
      const unset = fromFile(beside);
      expect(read(unset)).not.toEqual(want); // the default differs
      expect(unset.server.inEffect).toEqual(Object.entries(beside).map(([n, v]) => ({ name: n, value: v })));
      const set = fromFile({ ...beside, [name]: value });
      expect(read(set)).toEqual(want);
      const isSecret = name === 'MAYA_API_KEYS' || name === 'MAYA_GLM_RESPONSES_REASONING_KEY';
      expect(set.server.inEffect).toContainEqual({ name, value: isSecret ? '(hidden)' : value });
      expect(set.server.inEffect).toHaveLength(Object.keys(beside).length + 1);
    },
  );

  it('legacy STRATA_GLM_RESPONSES_ spellings work in the file; the MAYA_ one wins', () => {
    expect(fromFile({ STRATA_GLM_RESPONSES_CACHE_TTL_S: '10' }).settings.CACHE_TTL_S).toBe(10);
    expect(fromFile({ STRATA_GLM_RESPONSES_ITEM_REFERENCES: 'on' }).server.optIns?.itemReferences).toBe(true);
    const both = fromFile({ STRATA_GLM_RESPONSES_JOB_WORKERS: '3', MAYA_GLM_RESPONSES_JOB_WORKERS: '5' });
    expect(both.settings.JOB_WORKERS).toBe(5);
  });

  it('the order is flag > real environment > file > default', () => {
    const file = configFile({ MAYA_PORT: '9000', MAYA_ENGINE_SIMD: 'scalar' });
    expect(loadServeSettings({ config: file, port: '9002' }, { MAYA_PORT: '9001' }).server.port).toBe(9002);
    expect(loadServeSettings({ config: file }, { MAYA_PORT: '9001' }).server.port).toBe(9001);
    expect(loadServeSettings({ config: file }, {}).server.port).toBe(9000);
    expect(loadServeSettings({}, {}).server.port).toBe(8080);
    const engine = loadServeSettings({ config: file }, { MAYA_ENGINE_SIMD: 'avx2' }).server.engine;
    expect(engine?.simd).toBe('avx2');
  });

  it('a bad engine value in the file is a settings error naming it', () => {
    expect(() => fromFile({ MAYA_ENGINE_SIMD: 'sse' })).toThrow(/MAYA_ENGINE_SIMD=sse: must be one of auto, scalar/);
    expect(() => fromFile({ MAYA_CUDA_GRAPHS: 'yes' })).toThrow(/MAYA_CUDA_GRAPHS=yes: must be one of 0, 1/);
    expect(() => fromFile({ MAYA_ENGINE_KV_BYTES: '0' })).toThrow(/MAYA_ENGINE_KV_BYTES=0: must be a positive integer/);
    expect(() => fromFile({ MAYA_SPECULATIVE: 'eagle' })).toThrow(/MAYA_SPECULATIVE=eagle: must be one of auto, off/);
    expect(() => fromFile({ MAYA_SPECULATIVE_MAX_DRAFT: '65' })).toThrow(
      /MAYA_SPECULATIVE_MAX_DRAFT=65: must be a positive integer <= 64/,
    );
  });
});

describe('the engine settings of a --config file reach the engine', () => {
  it('as the ENG_PARAM_* values it is created with (maya serve → loader → ffi.ts)', async () => {
    const { settings, server } = fromFile({
      MAYA_PORT: '0',
      MAYA_WEIGHT_DTYPE: 'q8',
      MAYA_ENGINE_BACKEND: 'cuda',
      MAYA_ENGINE_SIMD: 'avx2',
      MAYA_ENGINE_KV_BYTES: '8388608',
      MAYA_KV_DTYPE: 'q8_0',
      MAYA_ENGINE_WEIGHT_COPY: '0',
      MAYA_ENGINE_LIB: '/opt/maya/libmaya_engine.so',
      MAYA_ENGINE_CUDA_LIB: '/opt/cuda/libmaya_engine_cuda.so',
      MAYA_CUDA_DEVICE: '3',
      MAYA_CUDA_TC_MIN_TOKENS: '0',
      MAYA_CUDA_GRAPHS: '0',
      MAYA_SPECULATIVE: 'ngram',
      MAYA_SPECULATIVE_MAX_DRAFT: '5',
    });
    const seen: Parameters<LoadModelRuntime>[1][] = [];
    service = await startService({
      settings,
      server,
      modelDir: '/models/x',
      loadRuntime: async (_dir, options) => {
        seen.push(options);
        return stubRuntime();
      },
      logger: silentLogger,
    });
    await service.loaded;
    const engine = seen[0]?.engine;
    expect(engine).toMatchObject({
      libPath: '/opt/maya/libmaya_engine.so',
      cudaLibPath: '/opt/cuda/libmaya_engine_cuda.so',
    });
    const p = encodeParams(engine ?? {});
    expect(p[ENG.PARAM_WEIGHT_DTYPE]).toBe(BigInt(ENG.WEIGHT_DTYPE_Q8));
    expect(p[ENG.PARAM_BACKEND]).toBe(2n);
    expect(p[ENG.PARAM_SIMD]).toBe(2n);
    expect(p[ENG.PARAM_KV_BYTES]).toBe(8388608n);
    expect(p[ENG.PARAM_KV_DTYPE]).toBe(1n + BigInt(ENG.KV_DTYPE_Q8_0));
    expect(p[ENG.PARAM_WEIGHT_COPY]).toBe(2n);
    expect(p[ENG.PARAM_CUDA_DEVICE]).toBe(3n);
    expect(p[ENG.PARAM_CUDA_TC_MIN_TOKENS]).toBe(BigInt(2 ** 30)); // 0 = never
    expect(p[ENG.PARAM_CUDA_GRAPHS]).toBe(2n);
    expect(p[ENG.PARAM_SPECULATIVE]).toBe(BigInt(ENG.SPEC_NGRAM));
    expect(p[ENG.PARAM_SPEC_MAX_DRAFT]).toBe(5n);
    expect(encodeParams({ speculative: 'off' })[ENG.PARAM_SPECULATIVE]).toBe(BigInt(ENG.SPEC_OFF));
    // Unset, every engine parameter is the library's default: 0, or 1 (as stored) for the weight dtype.
    const defaults = [...encodeParams(fromFile({}).server.engine ?? {})];
    expect(defaults.filter((value, index) => index !== ENG.PARAM_WEIGHT_DTYPE && value !== 0n)).toEqual([]);
  });

  it('maya generate --config: the engine runs scalar kernels on 8-bit weights and says so', async () => {
    const file = configFile({ MAYA_WEIGHT_DTYPE: 'q8', MAYA_ENGINE_SIMD: 'scalar', MAYA_ENGINE_BACKEND: 'cpu' });
    let out = '';
    let err = '';
    const io = { out: (t: string) => void (out += t), err: (t: string) => void (err += t) };
    const argv = ['--model', DEMO, '--prompt-ids', '1,2,3', '--max-tokens', '2', '--json', '--config', file];
    expect(await runGenerate(argv, io, {})).toBe(0);
    expect(err).toBe('');
    // 8-bit weights take the f16 KV cache by default.
    expect(JSON.parse(out).engine).toEqual({ backend: 'cpu', simd: 'scalar', weightDtype: 'q8', kvDtype: 'f16' });
    out = '';
    expect(await runGenerate(argv.slice(0, -2), io, { MAYA_ENGINE_BACKEND: 'cpu' })).toBe(0);
    expect(JSON.parse(out).engine).toMatchObject({ backend: 'cpu', weightDtype: 'bf16', kvDtype: 'f32' }); // as stored
    const bad = configFile({ MAYA_WEIGHT_DTYPE: 'q4' });
    err = '';
    expect(await runGenerate([...argv.slice(0, -1), bad], io, {})).toBe(2);
    expect(err).toContain('MAYA_WEIGHT_DTYPE=q4: must be one of stored, q8');
  });

  it("maya serve's runtime on the demo model: kernel path, weights, KV budget and decoding from the file", async () => {
    const demo = JSON.parse(readFileSync(join(DEMO, 'config.json'), 'utf8')) as Record<string, number>;
    // One KV block: layers x (K, V) x kv heads x head size x 16 positions x 2 bytes (q8 weights: an f16 cache).
    // The layers include the demo model's MTP layer: speculation on auto drafts with it, on the CPU.
    const layers = demo.num_hidden_layers! + (demo.num_nextn_predict_layers ?? 0);
    const blockBytes = layers * 2 * demo.num_key_value_heads! * demo.head_dim! * 16 * 2;
    const { settings, server } = fromFile({
      MAYA_PORT: '0',
      MAYA_ENGINE_BACKEND: 'cpu',
      MAYA_ENGINE_SIMD: 'scalar',
      MAYA_WEIGHT_DTYPE: 'q8',
      MAYA_ENGINE_KV_BYTES: String(40 * blockBytes),
      MAYA_CONSTRAINED_DECODING: '0',
      MAYA_GRAMMAR_MAX_STRING: '40',
    });
    service = await startService({
      settings,
      server,
      modelDir: DEMO,
      loadRuntime: loadModelRuntime,
      logger: silentLogger,
    });
    const runtime: ModelRuntime = await service.loaded;
    expect(runtime.engine.info).toMatchObject({
      backend: 'cpu',
      simd: 'scalar',
      weightDtype: 'q8',
      speculative: 'mtp',
      kvDtype: 'f16',
      kvBytesPerToken: blockBytes / 16,
      numBlocks: 40,
      kvCapacityTokens: 40 * 16,
    });
    expect(runtime.contextLength).toBe(40 * 16);
    expect(runtime.constrainedDecoding).toBe(false);
    expect(runtime.grammarLimits).toEqual({ maxStringLength: 40, maxItems: 16 });
  });
});

describe('maya serve --config as a process', () => {
  function serve(env: Record<string, string>) {
    const processEnv = { ...process.env };
    for (const name of Object.keys(env)) delete processEnv[name]; // only the file sets these
    const result = spawnSync(process.execPath, [BIN, 'serve', '--config', configFile(env)], {
      env: processEnv,
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { status: result.status, stderr: result.stderr };
  }

  it('a bad engine value in the file stops start-up with exit 2 naming it', () => {
    const run = serve({ MAYA_CUDA_TC_MIN_TOKENS: '-1' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('MAYA_CUDA_TC_MIN_TOKENS="-1": must be an integer >= 0');
  });

  it("MAYA_LOG_LEVEL from the file sets the one logger's level (JSON lines off a terminal)", () => {
    const missing = join(tmp, 'no-such-model');
    const info = serve({ MAYA_PORT: '0', MAYA_MODEL: missing });
    expect(info.status).toBe(1);
    const lines = info.stderr
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { level: number; message: string });
    expect(lines[0]).toMatchObject({ level: 30, message: expect.stringMatching(/^listening on http:/) });
    expect(lines.at(-1)).toMatchObject({
      level: 50,
      message: expect.stringContaining(`cannot load the model from ${missing}`),
    });
    const quiet = serve({ MAYA_PORT: '0', MAYA_MODEL: missing, MAYA_LOG_LEVEL: 'error' });
    expect(quiet.status).toBe(1);
    expect(quiet.stderr).not.toContain('listening on');
    expect(quiet.stderr).toContain('cannot load the model');
  });
});
