/** MAYA_DIALECT overrides the detected dialect; an unknown name stops start-up naming the variable. */
import { describe, expect, it } from 'vitest';
import { loadServerSettings, SettingsError } from '../../config/settings.ts';

describe('MAYA_DIALECT', () => {
  it('is undefined by default (detect from the checkpoint) and passes a known name through', () => {
    expect(loadServerSettings({}).dialect).toBeUndefined();
    expect(loadServerSettings({ MAYA_DIALECT: 'glm47' }).dialect).toBe('glm47');
  });
  it('rejects an unknown dialect with a message naming the variable and the choices', () => {
    expect(() => loadServerSettings({ MAYA_DIALECT: 'llama9' })).toThrow(SettingsError);
    expect(() => loadServerSettings({ MAYA_DIALECT: 'llama9' })).toThrow(
      /MAYA_DIALECT=llama9: must be one of glm45, glm47/,
    );
  });
});
