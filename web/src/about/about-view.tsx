/**
 * The About tab: the model (architecture, parameters, dialect, context, vision), the engine
 * (backend, kernel path, threads, weight dtype), the server (version, address, the settings that
 * differ from the defaults, secrets hidden) and copyable snippets that connect clients to it.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { CopyButton } from '../copy-button.tsx';
import { formatCompact, formatCount } from '../format.ts';
import { apiKey } from '../key-store.ts';
import { hasSetting, type MayaStatus } from '../status.ts';
import { snippets } from './snippets.ts';

function Facts({ rows }: { rows: [string, string][] }): JSX.Element {
  return (
    <dl class="facts">
      {rows.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

export function AboutView({ status }: { status: MayaStatus }): JSX.Element {
  const engine = status.engine;
  const params = engine.parameters;
  const active = engine.active_parameters;
  const model: [string, string][] = [
    ['Model', status.model],
    ['Architecture', engine.architecture ?? '–'],
    ['Parameters', params === undefined ? '–' : `${formatCompact(params)} (${formatCount(params)})`],
    ...(active !== undefined && active !== params
      ? [['Active parameters', formatCompact(active)] as [string, string]]
      : []),
    ['Dialect', status.model_dialect],
    ['Context', `${formatCount(status.context_length)} tokens`],
    ['Vision', engine.vision ? 'yes: pictures can be attached' : 'no'],
  ];
  const engineRows: [string, string][] = [
    ['Backend', engine.backend],
    ['SIMD path', engine.simd ?? '–'],
    ['Threads', formatCount(engine.threads)],
    ['Weight dtype', engine.weight_dtype ?? '–'],
    ['KV cache', `${formatCount(engine.blocks_total)} blocks`],
  ];
  const server: [string, string][] = [
    ['Version', status.version ?? '–'],
    ['Address', location.origin],
    ['Endpoints', status.dialects.map((d) => d.endpoint).join(', ')],
    ['Authentication', apiKey() !== undefined ? 'API keys (yours is in this tab only)' : 'none'],
  ];
  const settings = status.settings ?? [];
  return (
    <div class="about">
      <div class="about-grid">
        <section class="card" aria-labelledby="about-model">
          <h2 id="about-model">Model</h2>
          <Facts rows={model} />
        </section>
        <section class="card" aria-labelledby="about-engine">
          <h2 id="about-engine">Engine</h2>
          <Facts rows={engineRows} />
        </section>
        <section class="card" aria-labelledby="about-server">
          <h2 id="about-server">Server</h2>
          <Facts rows={server} />
          <h3>Settings that differ from the defaults</h3>
          {settings.length === 0 ? (
            <p class="muted">None: every setting has its default.</p>
          ) : (
            <Facts rows={settings.map((s) => [s.name, s.value])} />
          )}
        </section>
      </div>
      <Connect status={status} />
    </div>
  );
}

function Connect({ status }: { status: MayaStatus }): JSX.Element {
  const list = snippets({
    origin: location.origin,
    model: status.model,
    hasKeys: apiKey() !== undefined,
    hasEncryptedReasoning: hasSetting(status, 'MAYA_GLM_RESPONSES_ENCRYPTED_REASONING', 'on'),
  });
  const [chosen, setChosen] = useState(list[0]!.id);
  const snippet = list.find((s) => s.id === chosen) ?? list[0]!;
  return (
    <section class="card connect" aria-labelledby="about-connect">
      <h2 id="about-connect">Connect a client</h2>
      <p class="muted">
        These are the settings the README's Clients section tests, with this server's address and model filled in.
        {apiKey() !== undefined ? ' Set MAYA_API_KEY to your key first.' : ' Any API key text works on this server.'}
      </p>
      <div class="snippet-picker" role="group" aria-label="Client">
        {list.map((s) => (
          <button
            key={s.id}
            type="button"
            class={`chip${s.id === chosen ? ' chosen' : ''}`}
            aria-pressed={s.id === chosen ? 'true' : 'false'}
            onClick={() => setChosen(s.id)}
          >
            {s.title}
          </button>
        ))}
      </div>
      <div class="code-block">
        <div class="code-head">
          <span>{snippet.title}</span>
          <CopyButton text={snippet.code} label={`Copy the ${snippet.title} snippet`} />
        </div>
        <pre aria-label={`${snippet.title} snippet`}>
          <code data-snippet={snippet.id}>{snippet.code}</code>
        </pre>
      </div>
    </section>
  );
}
