import { describe, expect, it } from 'vitest';
import { loadResponsesOptIns, loadServerSettings, SettingsError } from '../../config/settings.ts';

const M = 'MAYA_GLM_RESPONSES_';
const HEX_KEY = 'ab'.repeat(32);
const BASE64_KEY = Buffer.alloc(32, 5).toString('base64');

function errorOf(fn: () => unknown): SettingsError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SettingsError) return error;
    throw error;
  }
  throw new Error('no SettingsError');
}

describe('opt-in settings (ITEM_REFERENCES, ENCRYPTED_REASONING, REASONING_KEY)', () => {
  it('are off by default, and the server settings then carry no optIns', () => {
    expect(loadResponsesOptIns({})).toEqual({ itemReferences: false, encryptedReasoning: false });
    expect(loadServerSettings({}).optIns).toBeUndefined();
    expect(loadServerSettings({ [`${M}ITEM_REFERENCES`]: 'off' }).optIns).toBeUndefined();
  });

  it('read on/off (any case, trimmed); the legacy STRATA_ spelling works and MAYA_ wins', () => {
    expect(loadServerSettings({ [`${M}ITEM_REFERENCES`]: 'on', [`${M}ENCRYPTED_REASONING`]: ' ON ' }).optIns).toEqual({
      itemReferences: true,
      encryptedReasoning: true,
    });
    expect(loadResponsesOptIns({ STRATA_GLM_RESPONSES_ENCRYPTED_REASONING: 'on' }).encryptedReasoning).toBe(true);
    expect(
      loadResponsesOptIns({ STRATA_GLM_RESPONSES_ITEM_REFERENCES: 'on', [`${M}ITEM_REFERENCES`]: 'off' })
        .itemReferences,
    ).toBe(false);
  });

  it('a value other than on/off stops start-up, naming the variable', () => {
    for (const [name, value] of [
      ['ITEM_REFERENCES', '1'],
      ['ENCRYPTED_REASONING', 'true'],
      ['ENCRYPTED_REASONING', 'yes'],
    ]) {
      const error = errorOf(() => loadServerSettings({ [`${M}${name}`]: value }));
      expect(error.variable).toBe(`${M}${name}`);
      expect(error.message).toContain('on or off');
    }
  });

  it('REASONING_KEY: 32 bytes as 64 hex digits or base64', () => {
    expect(loadResponsesOptIns({ [`${M}REASONING_KEY`]: HEX_KEY }).reasoningKey).toEqual(
      new Uint8Array(Buffer.from(HEX_KEY, 'hex')),
    );
    expect(loadResponsesOptIns({ [`${M}REASONING_KEY`]: BASE64_KEY }).reasoningKey).toEqual(new Uint8Array(32).fill(5));
  });

  it('a bad REASONING_KEY stops start-up, naming the variable and never echoing the value', () => {
    for (const value of [
      'ab'.repeat(31),
      'secret-passphrase',
      Buffer.alloc(16, 1).toString('base64'),
      'zz'.repeat(32),
    ]) {
      const error = errorOf(() => loadServerSettings({ [`${M}REASONING_KEY`]: value }));
      expect(error.variable).toBe(`${M}REASONING_KEY`);
      expect(error.message).toContain('32 bytes');
      expect(error.message).not.toContain(value);
    }
  });
});
