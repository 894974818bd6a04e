/**
 * The engine settings of the engines tests create in-process: the test environment's, read
 * through config/ as `maya serve` reads its own (the C library reads no environment). vitest.config.ts
 * sets MAYA_ENGINE_BACKEND=cpu, so a machine with a GPU still runs the unit tests on the CPU
 * backend; the CLI processes tests spawn inherit the variable and read it through config/ too.
 */
import { engineOptions, loadEngineSettings, type EngineSettings } from '../../config/engine-settings.ts';
import type { NativeEngineOptions } from '../../engine-cuda/native-engine.ts';

export const TEST_ENGINE_SETTINGS: EngineSettings = loadEngineSettings(process.env);

/** NativeEngine.load's options for TEST_ENGINE_SETTINGS (weights as stored). */
export const TEST_ENGINE: NativeEngineOptions = engineOptions(TEST_ENGINE_SETTINGS, undefined);
