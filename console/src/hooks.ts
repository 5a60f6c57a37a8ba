import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "./api.ts";

/**
 * Loads data, again on demand (`reload`) and every `pollMs` while that says so (a function decides from
 * the latest data, e.g. "while processing"). A manual reload also restarts polling that had stopped.
 */
export function useLoad<T>(
  load: () => Promise<T>,
  deps: unknown[],
  pollMs?: number | ((data: T | undefined) => number | undefined),
) {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const loadRef = useRef(load);
  loadRef.current = load;
  const pollRef = useRef(pollMs);
  pollRef.current = pollMs;
  const dataRef = useRef<T | undefined>(undefined);
  /** Bumped when the deps change or the component goes: answers to older loads are dropped. */
  const generation = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const reload = useCallback(async (): Promise<void> => {
    const mine = generation.current;
    setLoading(true);
    try {
      const value = await loadRef.current();
      if (mine !== generation.current) return;
      dataRef.current = value;
      setData(value);
      setError(undefined);
    } catch (e) {
      if (mine !== generation.current) return;
      setError(messageOf(e));
    }
    setLoading(false);
    const poll = pollRef.current;
    const every = typeof poll === "function" ? poll(dataRef.current) : poll;
    // Whichever load finishes last sets the one timer.
    if (timer.current) clearTimeout(timer.current);
    timer.current = every ? setTimeout(() => void reload(), every) : undefined;
  }, []);

  useEffect(() => {
    generation.current += 1;
    void reload();
    return () => {
      generation.current += 1;
      if (timer.current) clearTimeout(timer.current);
      timer.current = undefined;
    };
  }, deps);
  return { data, error, loading, reload, setData };
}

export function messageOf(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  return e instanceof Error ? e.message : String(e);
}

/** Runs an action, keeping its busy state and its error or success message for display. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [message, setMessage] = useState<string>();
  const run = useCallback(async <T>(fn: () => Promise<T>, success?: string): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    setMessage(undefined);
    try {
      const value = await fn();
      if (success) setMessage(success);
      return value;
    } catch (e) {
      setError(messageOf(e));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, message, run, setMessage, setError };
}
