/**
 * The page: asks /v1/status what it is talking to (a 401 means the server wants a key: the key
 * form; a 503 while the model loads: wait and ask again), then shows the Chat, Monitor and About
 * tabs. The tab is kept in the address (#chat, #monitor, #about).
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, getJson, type ApiErrorInfo } from './api.ts';
import { apiKey, setApiKey } from './key-store.ts';
import type { MayaStatus } from './status.ts';
import { KeyForm } from './key-form.tsx';
import { Tabs, TAB_IDS, type TabId } from './tabs.tsx';
import { ChatView } from './chat/chat-view.tsx';
import { MonitorView } from './monitor/monitor-view.tsx';
import { AboutView } from './about/about-view.tsx';
import { ErrorBox } from './error-box.tsx';

type Phase =
  | { kind: 'connecting' }
  | { kind: 'loading-model' }
  | { kind: 'needs-key'; error?: ApiErrorInfo }
  | { kind: 'failed'; error: ApiErrorInfo }
  | { kind: 'ready'; status: MayaStatus };

function tabFromHash(): TabId {
  const id = location.hash.slice(1);
  return (TAB_IDS as readonly string[]).includes(id) ? (id as TabId) : 'chat';
}

export function App(): JSX.Element {
  const [phase, setPhase] = useState<Phase>({ kind: 'connecting' });
  const [tab, setTab] = useState<TabId>(tabFromHash);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    let retry: number | undefined;
    getJson<MayaStatus>('/v1/status').then(
      (status) => setPhase({ kind: 'ready', status }),
      (error: unknown) => {
        const info = error instanceof ApiError ? error.info : { message: (error as Error).message };
        if (info.status === 401) setPhase({ kind: 'needs-key', ...(apiKey() !== undefined ? { error: info } : {}) });
        else if (info.status === 503) {
          setPhase({ kind: 'loading-model' });
          retry = window.setTimeout(() => setAttempt((n) => n + 1), 1000);
        } else setPhase({ kind: 'failed', error: info });
      },
    );
    return () => window.clearTimeout(retry);
  }, [attempt]);

  useEffect(() => {
    const onHash = () => setTab(tabFromHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const choose = (id: TabId) => {
    setTab(id);
    history.replaceState(null, '', `#${id}`);
    if (id === 'about') setAttempt((n) => n + 1); // fresh settings and counters
  };
  const useKey = (key: string | undefined) => {
    setApiKey(key);
    setAttempt((n) => n + 1);
  };
  const status = phase.kind === 'ready' ? phase.status : undefined;
  return (
    <div class="app">
      <header class="topbar">
        <div class="brand">
          <span class="logo" aria-hidden="true">
            M
          </span>
          <span class="brand-name">Maya</span>
          {status ? <span class="model-badge">{status.model}</span> : null}
        </div>
        {status ? <Tabs current={tab} onChoose={choose} /> : null}
        <div class="topbar-end">
          {apiKey() !== undefined ? (
            <button type="button" class="button small ghost" onClick={() => useKey(undefined)}>
              Forget key
            </button>
          ) : null}
        </div>
      </header>
      <main class="main">
        {phase.kind === 'connecting' ? <p class="centered muted">Connecting…</p> : null}
        {phase.kind === 'loading-model' ? (
          <p class="centered muted" role="status">
            The model is loading…
          </p>
        ) : null}
        {phase.kind === 'needs-key' ? <KeyForm error={phase.error} onKey={useKey} /> : null}
        {phase.kind === 'failed' ? (
          <div class="centered narrow">
            <ErrorBox error={phase.error} />
          </div>
        ) : null}
        {status ? <Panels tab={tab} status={status} /> : null}
      </main>
    </div>
  );
}

function Panels({ tab, status }: { tab: TabId; status: MayaStatus }): JSX.Element {
  return (
    <>
      <div id="panel-chat" role="tabpanel" aria-labelledby="tab-chat" hidden={tab !== 'chat'} class="panel">
        <ChatView status={status} />
      </div>
      <div id="panel-monitor" role="tabpanel" aria-labelledby="tab-monitor" hidden={tab !== 'monitor'} class="panel">
        <MonitorView isActive={tab === 'monitor'} />
      </div>
      <div id="panel-about" role="tabpanel" aria-labelledby="tab-about" hidden={tab !== 'about'} class="panel">
        {tab === 'about' ? <AboutView status={status} /> : null}
      </div>
    </>
  );
}
