import { useEffect, useState } from "preact/hooks";

/** Client-side routes under /console/ (the server answers index.html for every one of them). */
export const BASE = "/console/";

const listeners = new Set<() => void>();

function current(): string {
  const path = window.location.pathname;
  return path.startsWith(BASE) ? path.slice(BASE.length).replace(/\/+$/, "") : "";
}

export function navigate(to: string, opts: { replace?: boolean } = {}) {
  const url = `${BASE}${to.replace(/^\/+/, "")}`;
  if (opts.replace) window.history.replaceState(null, "", url);
  else window.history.pushState(null, "", url);
  for (const l of listeners) l();
}

window.addEventListener("popstate", () => {
  for (const l of listeners) l();
});

/** The current route (path below /console/, and the query string), re-rendered on navigation. */
export function useRoute(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((t) => t + 1);
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
  return { path: current(), query: new URLSearchParams(window.location.search) };
}

/** A link that navigates without reloading the page (and still works as a normal link). */
export function linkProps(to: string) {
  return {
    href: `${BASE}${to.replace(/^\/+/, "")}`,
    onClick: (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      navigate(to);
    },
  };
}
