/**
 * Accessibility checks on a live page, computed rather than eyeballed:
 * - contrastProblems: every visible text's contrast ratio against the background it is painted on
 *   (ancestors' backgrounds composited, opacity applied), held to WCAG 2.x AA: 4.5:1, or 3:1 for
 *   large text (24 px, or 18.66 px bold); the lines of the charts to 3:1 (non-text contrast).
 *   Disabled controls are exempt, as WCAG exempts inactive components.
 * - controls: Chromium's own accessibility tree (CDP Accessibility.getFullAXTree), every control
 *   with the name a screen reader would announce.
 */
import type { Page } from 'playwright-core';

const CONTROL_ROLES = new Set([
  'button',
  'textbox',
  'combobox',
  'checkbox',
  'tab',
  'link',
  'spinbutton',
  'listbox',
  'radio',
  'switch',
  'searchbox',
]);

export interface Control {
  role: string;
  name: string;
}

/** The page's controls in the accessibility tree (hidden ones are not in it) with their computed names. */
export async function controls(page: Page): Promise<Control[]> {
  const cdp = await page.context().newCDPSession(page);
  const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as {
    nodes: { ignored: boolean; role?: { value: string }; name?: { value: string } }[];
  };
  await cdp.detach();
  return nodes
    .filter((node) => !node.ignored && CONTROL_ROLES.has(node.role?.value ?? ''))
    .map((node) => ({ role: node.role!.value, name: (node.name?.value ?? '').trim() }));
}

/** Texts (and chart lines) whose contrast is below WCAG AA, as "ratio: text (colour on background)". */
export function contrastProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    type Rgba = [number, number, number, number];
    const parse = (css: string): Rgba => {
      const parts = (/rgba?\(([^)]*)\)/.exec(css)?.[1] ?? '0 0 0 0')
        .split(/[\s,/]+/)
        .filter(Boolean)
        .map(Number);
      return [parts[0]!, parts[1]!, parts[2]!, parts[3] ?? 1];
    };
    const over = (top: Rgba, bottom: Rgba): Rgba => {
      const a = top[3] + bottom[3] * (1 - top[3]);
      if (a === 0) return [0, 0, 0, 0];
      const mix = (i: number) => (top[i]! * top[3] + bottom[i]! * bottom[3] * (1 - top[3])) / a;
      return [mix(0), mix(1), mix(2), a];
    };
    const luminance = ([r, g, b]: Rgba) => {
      const lin = (c: number) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
      return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    };
    const ratio = (a: Rgba, b: Rgba) => {
      const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
      return (hi! + 0.05) / (lo! + 0.05);
    };
    /** The opaque colour behind `el`: the canvas, then each ancestor's background, outermost first. */
    const background = (el: Element): Rgba => {
      const chain: Element[] = [];
      for (let e: Element | null = el; e; e = e.parentElement) chain.unshift(e);
      const canvas: Rgba = matchMedia('(prefers-color-scheme: dark)').matches ? [18, 18, 18, 1] : [255, 255, 255, 1];
      return chain.reduce((bg, e) => over(parse(getComputedStyle(e).backgroundColor), bg), canvas);
    };
    const opacity = (el: Element) => {
      let value = 1;
      for (let e: Element | null = el; e; e = e.parentElement) value *= Number(getComputedStyle(e).opacity);
      return value;
    };
    const problems: string[] = [];
    let checked = 0;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      const text = node.textContent?.trim() ?? '';
      if (!el || text === '' || !el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
      if (el.closest(':disabled, .visually-hidden, .offscreen')) continue;
      const style = getComputedStyle(el);
      const bg = background(el);
      const color = parse(style.color);
      const fg = over([color[0], color[1], color[2], color[3] * opacity(el)], bg);
      const size = parseFloat(style.fontSize);
      const isLarge = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      const value = ratio(fg, bg);
      checked++;
      if (value < (isLarge ? 3 : 4.5))
        problems.push(
          `${value.toFixed(2)}: ${JSON.stringify(text.slice(0, 40))} (${style.color} on rgb(${bg.slice(0, 3).map(Math.round).join(', ')}))`,
        );
    }
    for (const line of document.querySelectorAll('path.chart-line')) {
      if (!line.checkVisibility()) continue;
      const bg = background(line);
      const value = ratio(parse(getComputedStyle(line).stroke), bg);
      checked++;
      if (value < 3) problems.push(`${value.toFixed(2)}: chart line ${line.getAttribute('class')}`);
    }
    if (checked < 5) problems.push(`only ${checked} texts checked: is the page shown?`);
    return problems;
  });
}
