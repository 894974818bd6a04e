/**
 * The grammar IR of constrained decoding: a byte-level context-free grammar as plain data (it
 * crosses to the engine worker by structured clone), plus small builders. Terminals are bytes
 * (`text` literals are UTF-8 encoded, `bytes` classes are byte ranges) or special tokens named by
 * their content (`special`); `avoid` is any byte string that never contains one of its markers
 * (the free text of a dialect, where spelling a marker out in plain bytes would open markup).
 * Rules are referenced by name, so recursion (nested JSON) is allowed.
 */

export type Expr =
  | { k: 'text'; v: string }
  | { k: 'bytes'; ranges: number[] }
  | { k: 'seq'; items: Expr[] }
  | { k: 'alt'; items: Expr[] }
  /** max -1: unbounded. */
  | { k: 'rep'; item: Expr; min: number; max: number }
  | { k: 'ref'; name: string }
  | { k: 'special'; v: string }
  | { k: 'avoid'; markers: string[] };

export interface Grammar {
  rules: Record<string, Expr>;
  root: Expr;
}

export const text = (v: string): Expr => ({ k: 'text', v });
/** One byte in any of the inclusive [lo, hi] ranges. */
export const bytes = (...ranges: Array<[number, number]>): Expr => ({ k: 'bytes', ranges: ranges.flat() });
export const seq = (...items: Expr[]): Expr => {
  const flat = items.flatMap((item) => (item.k === 'seq' ? item.items : [item]));
  return flat.length === 1 ? flat[0]! : { k: 'seq', items: flat };
};
export const alt = (...items: Expr[]): Expr => (items.length === 1 ? items[0]! : { k: 'alt', items });
export const rep = (item: Expr, min: number, max: number): Expr => ({ k: 'rep', item, min, max });
export const opt = (item: Expr): Expr => rep(item, 0, 1);
export const ref = (name: string): Expr => ({ k: 'ref', name });
export const special = (v: string): Expr => ({ k: 'special', v });
export const avoid = (...markers: string[]): Expr => ({ k: 'avoid', markers });
export const EMPTY: Expr = { k: 'seq', items: [] };

/** Collects rules while an Expr tree is built; `define` returns a ref to the rule. */
export class RuleSet {
  readonly rules: Record<string, Expr> = {};
  private next = 0;

  define(hint: string, body: Expr | ((self: Expr) => Expr)): Expr {
    const name = `${hint}#${this.next++}`;
    const self = ref(name);
    this.rules[name] = typeof body === 'function' ? body(self) : body;
    return self;
  }

  /** Defines a rule once under a fixed name (shared pieces such as the JSON string). */
  shared(name: string, make: () => Expr): Expr {
    if (!(name in this.rules)) {
      this.rules[name] = EMPTY;
      this.rules[name] = make();
    }
    return ref(name);
  }

  grammar(root: Expr): Grammar {
    return { rules: this.rules, root };
  }
}
