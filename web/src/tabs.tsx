/** The tab list (WAI-ARIA tabs): arrow keys, Home and End move between tabs and select them. */
import type { JSX } from 'preact';

export const TAB_IDS = ['chat', 'monitor', 'about'] as const;
export type TabId = (typeof TAB_IDS)[number];
const LABELS: Record<TabId, string> = { chat: 'Chat', monitor: 'Monitor', about: 'About' };

export function Tabs({ current, onChoose }: { current: TabId; onChoose: (id: TabId) => void }): JSX.Element {
  const move = (event: KeyboardEvent) => {
    const at = TAB_IDS.indexOf(current);
    const next = {
      ArrowRight: TAB_IDS[(at + 1) % TAB_IDS.length],
      ArrowLeft: TAB_IDS[(at + TAB_IDS.length - 1) % TAB_IDS.length],
      Home: TAB_IDS[0],
      End: TAB_IDS[TAB_IDS.length - 1],
    }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    onChoose(next);
    document.getElementById(`tab-${next}`)?.focus();
  };
  return (
    <div class="tabs" role="tablist" aria-label="Sections" onKeyDown={move}>
      {TAB_IDS.map((id) => (
        <button
          key={id}
          id={`tab-${id}`}
          type="button"
          role="tab"
          class="tab"
          aria-selected={id === current ? 'true' : 'false'}
          aria-controls={`panel-${id}`}
          tabIndex={id === current ? 0 : -1}
          onClick={() => onChoose(id)}
        >
          {LABELS[id]}
        </button>
      ))}
    </div>
  );
}
