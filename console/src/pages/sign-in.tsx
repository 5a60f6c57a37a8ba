import { useState } from "preact/hooks";
import { del, post, type Session } from "../api.ts";
import { ErrorNote } from "../components.tsx";
import { messageOf } from "../hooks.ts";

export async function signOut() {
  await del("/v3/console/session").catch(() => undefined);
}

export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [apiKey, setApiKey] = useState("");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (body: unknown) => {
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await post<Session>("/v3/console/session", body));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="sign-in">
      <h1>Sign in to the memory console</h1>
      <ErrorNote error={error} />
      <form
        aria-labelledby="with-key"
        onSubmit={(e) => {
          e.preventDefault();
          void submit({ apiKey });
        }}
      >
        <h2 id="with-key">With an admin API key</h2>
        <label for="api-key">Admin API key</label>
        <input
          id="api-key"
          name="apiKey"
          type="password"
          autoComplete="off"
          required
          value={apiKey}
          onInput={(e) => setApiKey(e.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Sign in with key
        </button>
      </form>
      <form
        aria-labelledby="with-password"
        onSubmit={(e) => {
          e.preventDefault();
          void submit({ email, password });
        }}
      >
        <h2 id="with-password">With a console account</h2>
        <label for="email">Email</label>
        <input
          id="email"
          name="email"
          type="email"
          autoComplete="username"
          required
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
        />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
