/**
 * Markdown of model output, rendered safely: marked only lexes the text into tokens, and this
 * file turns each token into Preact elements whose text is text. No string of the model's ever
 * becomes HTML (raw HTML shows as its source), links work only for http(s) and mailto URLs and
 * open outside the page, and images are never loaded (they show as their description and URL):
 * the model cannot inject markup or make the page fetch from another host.
 */
import { Lexer, type Token, type Tokens } from 'marked';
import type { ComponentChildren, JSX } from 'preact';
import { CopyButton } from './copy-button.tsx';

export function Markdown({ text }: { text: string }): JSX.Element {
  const tokens = Lexer.lex(text, { gfm: true, breaks: false });
  return <div class="markdown">{blocks(tokens)}</div>;
}

function blocks(tokens: Token[]): ComponentChildren[] {
  return tokens.map((token, i) => block(token, i));
}

function block(token: Token, key: number): ComponentChildren {
  switch (token.type) {
    case 'space':
    case 'def':
      return null;
    case 'heading': {
      const t = token as Tokens.Heading;
      const Tag = `h${Math.min(6, Math.max(3, t.depth + 2))}` as 'h3';
      return <Tag key={key}>{inline(t.tokens)}</Tag>;
    }
    case 'paragraph':
      return <p key={key}>{inline((token as Tokens.Paragraph).tokens)}</p>;
    case 'code': {
      const t = token as Tokens.Code;
      return <CodeBlock key={key} code={t.text} lang={t.lang?.split(/\s/)[0] ?? ''} />;
    }
    case 'blockquote':
      return <blockquote key={key}>{blocks((token as Tokens.Blockquote).tokens)}</blockquote>;
    case 'list':
      return list(token as Tokens.List, key);
    case 'table':
      return table(token as Tokens.Table, key);
    case 'hr':
      return <hr key={key} />;
    case 'html':
      return (
        <pre key={key} class="md-raw">
          {(token as Tokens.HTML).text}
        </pre>
      );
    case 'checkbox':
      return checkbox(token as Tokens.Checkbox, key);
    case 'text': {
      const t = token as Tokens.Text;
      return <p key={key}>{t.tokens ? inline(t.tokens) : t.text}</p>;
    }
    default:
      return <p key={key}>{token.raw}</p>;
  }
}

function list(t: Tokens.List, key: number): ComponentChildren {
  const items = t.items.map((item, i) => (
    <li key={i}>
      {item.tokens.map((child, j) =>
        child.type === 'text' ? inline((child as Tokens.Text).tokens ?? [child]) : block(child, j),
      )}
    </li>
  ));
  return t.ordered ? (
    <ol key={key} start={typeof t.start === 'number' ? t.start : undefined}>
      {items}
    </ol>
  ) : (
    <ul key={key}>{items}</ul>
  );
}

function table(t: Tokens.Table, key: number): ComponentChildren {
  const align = (i: number) => t.align[i] ?? undefined;
  return (
    <div key={key} class="md-table">
      <table>
        <thead>
          <tr>
            {t.header.map((cell, i) => (
              <th key={i} scope="col" class={align(i) ? `align-${align(i)}` : undefined}>
                {inline(cell.tokens)}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {t.rows.map((row, r) => (
            <tr key={r}>
              {row.map((cell, i) => (
                <td key={i} class={align(i) ? `align-${align(i)}` : undefined}>
                  {inline(cell.tokens)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function inline(tokens: Token[]): ComponentChildren[] {
  return tokens.map((token, key) => {
    switch (token.type) {
      case 'text':
      case 'escape': {
        const t = token as Tokens.Text;
        return t.tokens ? <span key={key}>{inline(t.tokens)}</span> : t.text;
      }
      case 'strong':
        return <strong key={key}>{inline((token as Tokens.Strong).tokens)}</strong>;
      case 'em':
        return <em key={key}>{inline((token as Tokens.Em).tokens)}</em>;
      case 'del':
        return <del key={key}>{inline((token as Tokens.Del).tokens)}</del>;
      case 'codespan':
        return <code key={key}>{(token as Tokens.Codespan).text}</code>;
      case 'br':
        return <br key={key} />;
      case 'checkbox':
        return checkbox(token as Tokens.Checkbox, key);
      case 'link':
        return link(token as Tokens.Link, key);
      case 'image': {
        const t = token as Tokens.Image;
        return (
          <span key={key} class="md-image">
            [image{t.text ? `: ${t.text}` : ''} — {t.href}]
          </span>
        );
      }
      default:
        return token.raw;
    }
  });
}

function checkbox(t: Tokens.Checkbox, key: number): ComponentChildren {
  return (
    <span key={key} role="img" aria-label={t.checked ? 'done' : 'not done'}>
      {t.checked ? '☑ ' : '☐ '}
    </span>
  );
}

/** Only absolute http(s) and mailto links become links; anything else stays text. */
export function safeHref(href: string): string | undefined {
  try {
    const url = new URL(href);
    return ['http:', 'https:', 'mailto:'].includes(url.protocol) ? url.href : undefined;
  } catch {
    return undefined;
  }
}

function link(t: Tokens.Link, key: number): ComponentChildren {
  const href = safeHref(t.href);
  const label = inline(t.tokens);
  if (href === undefined) return <span key={key}>{label}</span>;
  return (
    <a key={key} href={href} target="_blank" rel="noopener noreferrer nofollow">
      {label}
    </a>
  );
}

export function CodeBlock({ code, lang }: { code: string; lang: string }): JSX.Element {
  return (
    <div class="code-block">
      <div class="code-head">
        <span class="code-lang">{lang || 'code'}</span>
        <CopyButton text={code} label={`Copy ${lang || 'code'}`} />
      </div>
      <pre>
        <code>{code}</code>
      </pre>
    </div>
  );
}
