import { FakeEngine } from '../helpers/fake-engine.ts';
import { NativeEngine } from '../../engine-cuda/native-engine.ts';
import { runEngineContract } from './engine.contract.ts';
import { fixtureDir } from './engine-helpers.ts';
import { TEST_ENGINE } from '../helpers/test-engine.ts';

runEngineContract('FakeEngine', async () => ({
  engine: new FakeEngine({ script: { tokens: Array.from({ length: 60 }, (_, i) => 100 + ((i * 7) % 13)) } }),
  prompt: [1, 2, 3],
}));

runEngineContract('NativeEngine (qwen3 fixture)', async () => ({
  engine: await NativeEngine.load(fixtureDir('qwen3-f16'), TEST_ENGINE),
  prompt: [11, 22, 33, 44, 55],
}));
