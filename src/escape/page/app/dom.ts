/** Small DOM helpers for the escape page: elements by id, text-only content (never HTML). */

export function $(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page lacks #${id}`);
  return el;
}

export function make<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  text?: string,
  cls?: string,
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (text !== undefined) el.textContent = text;
  if (cls) el.className = cls;
  return el;
}

export function clear(el: HTMLElement): HTMLElement {
  el.textContent = "";
  return el;
}

/** A button that copies `value()` to the clipboard (or selects it for a manual copy). */
export function copyButton(
  value: () => string,
  label = "Copy",
  select?: HTMLTextAreaElement,
): HTMLButtonElement {
  const b = make("button", label, "copy");
  b.type = "button";
  b.addEventListener("click", () => {
    const done = () => {
      b.textContent = "Copied";
      setTimeout(() => (b.textContent = label), 1500);
    };
    if (navigator.clipboard && window.isSecureContext)
      navigator.clipboard.writeText(value()).then(done, () => select?.select());
    else {
      select?.focus();
      select?.select();
      try {
        if (document.execCommand("copy")) done();
      } catch {
        // Selected for a manual copy.
      }
    }
  });
  return b;
}

/** A long hex value that wraps anywhere, with a copy button beside it. */
export function hexValue(value: string): HTMLElement {
  const span = make("span", undefined, "hexrow");
  span.appendChild(make("code", value, "hex"));
  span.appendChild(copyButton(() => value));
  return span;
}

/** Offers `text` as a file to save (a blob URL: same-origin, allowed by CSP default-src 'self'). */
export function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const a = make("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
