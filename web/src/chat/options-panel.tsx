/**
 * The request options beside the chat: reasoning effort, output limit, function tools (a JSON
 * editor) and the json_schema output format (name and schema), each editor checked as typed.
 * Sections the server reports that this page does not know (MCP servers, when they land) are
 * listed under their names.
 */
import type { JSX } from 'preact';
import { EFFORTS, jsonProblem, type ChatOptions, type Effort } from './options.ts';
import { StatusSection } from '../status-section.tsx';

export function OptionsPanel(props: {
  options: ChatOptions;
  setOptions: (options: ChatOptions) => void;
  extra: [string, Record<string, unknown>][];
}): JSX.Element {
  const { options, setOptions, extra } = props;
  const set = (patch: Partial<ChatOptions>) => setOptions({ ...options, ...patch });
  const toolsProblem = options.toolsOn ? jsonProblem(options.toolsJson, 'array') : undefined;
  const schemaProblem = options.schemaOn ? jsonProblem(options.schemaJson, 'object') : undefined;
  return (
    <aside class="options" aria-label="Request options">
      <h2 class="panel-title">Options</h2>
      <div class="field">
        <label for="effort">Reasoning effort</label>
        <select
          id="effort"
          class="input"
          value={options.effort}
          onChange={(event) => set({ effort: event.currentTarget.value as Effort })}
        >
          {EFFORTS.map((effort) => (
            <option key={effort} value={effort}>
              {effort}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="max-tokens">Max output tokens</label>
        <input
          id="max-tokens"
          class="input"
          type="number"
          min={1}
          step={1}
          value={options.maxOutputTokens}
          onChange={(event) =>
            set({ maxOutputTokens: Math.max(1, Math.floor(Number(event.currentTarget.value)) || 1) })
          }
        />
      </div>
      <fieldset class="field">
        <legend class="visually-hidden">Function tools</legend>
        <label class="check">
          <input
            type="checkbox"
            checked={options.toolsOn}
            onChange={(event) => set({ toolsOn: event.currentTarget.checked })}
          />
          Function tools
        </label>
        {options.toolsOn ? (
          <JsonEditor
            id="tools-json"
            label="Function tools (JSON array)"
            value={options.toolsJson}
            problem={toolsProblem}
            onInput={(toolsJson) => set({ toolsJson })}
          />
        ) : null}
      </fieldset>
      <fieldset class="field">
        <legend class="visually-hidden">Structured output</legend>
        <label class="check">
          <input
            type="checkbox"
            checked={options.schemaOn}
            onChange={(event) => set({ schemaOn: event.currentTarget.checked })}
          />
          JSON schema output
        </label>
        {options.schemaOn ? (
          <>
            <label for="schema-name">Schema name</label>
            <input
              id="schema-name"
              class="input"
              value={options.schemaName}
              onInput={(event) => set({ schemaName: event.currentTarget.value })}
            />
            <JsonEditor
              id="schema-json"
              label="JSON schema"
              value={options.schemaJson}
              problem={schemaProblem}
              onInput={(schemaJson) => set({ schemaJson })}
            />
          </>
        ) : null}
      </fieldset>
      {extra.map(([name, section]) => (
        <StatusSection key={name} name={name} section={section} />
      ))}
    </aside>
  );
}

function JsonEditor(props: {
  id: string;
  label: string;
  value: string;
  problem: string | undefined;
  onInput: (value: string) => void;
}): JSX.Element {
  const { id, label, value, problem, onInput } = props;
  return (
    <>
      <label for={id}>{label}</label>
      <textarea
        id={id}
        class="input mono"
        rows={10}
        wrap="off"
        spellcheck={false}
        value={value}
        aria-invalid={problem ? 'true' : undefined}
        aria-describedby={problem ? `${id}-problem` : undefined}
        onInput={(event) => onInput(event.currentTarget.value)}
      />
      {problem ? (
        <p id={`${id}-problem`} class="field-problem">
          {problem}
        </p>
      ) : null}
    </>
  );
}
