/** Number formatting for the page: counts, bytes, rates and durations, in the user's locale. */
const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 2 });

export function formatCount(n: number | undefined): string {
  return n === undefined || !Number.isFinite(n) ? '–' : integer.format(n);
}

export function formatCompact(n: number | undefined): string {
  return n === undefined || !Number.isFinite(n) ? '–' : compact.format(n);
}

export function formatRate(n: number | undefined): string {
  return n === undefined || !Number.isFinite(n) ? '–' : n >= 100 ? integer.format(n) : decimal.format(n);
}

export function formatBytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? integer.format(value) : decimal.format(value)} ${units[unit]}`;
}

export function formatMs(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '–';
  const ms = seconds * 1000;
  return ms >= 1000 ? `${decimal.format(ms / 1000)} s` : `${ms >= 10 ? integer.format(ms) : decimal.format(ms)} ms`;
}
