import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { del, post, type Session } from "../api.ts";
import { ErrorNote } from "../components.tsx";
import { LabelledInput } from "../forms.tsx";
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
      <Way
        id="with-key"
        title="With an admin API key"
        button="Sign in with key"
        busy={busy}
        onSubmit={() => submit({ apiKey })}
      >
        <LabelledInput
          id="api-key"
          label="Admin API key"
          value={apiKey}
          onValue={setApiKey}
          name="apiKey"
          type="password"
          autoComplete="off"
          required
        />
      </Way>
      <Way
        id="with-password"
        title="With a console account"
        button="Sign in"
        busy={busy}
        onSubmit={() => submit({ email, password })}
      >
        <LabelledInput
          id="email"
          label="Email"
          value={email}
          onValue={setEmail}
          name="email"
          type="email"
          autoComplete="username"
          required
        />
        <LabelledInput
          id="password"
          label="Password"
          value={password}
          onValue={setPassword}
          name="password"
          type="password"
          autoComplete="current-password"
          required
        />
      </Way>
    </main>
  );
}

/** One way to sign in: a form named by its heading. */
function Way({
  id,
  title,
  button,
  busy,
  onSubmit,
  children,
}: {
  id: string;
  title: string;
  button: string;
  busy: boolean;
  onSubmit: () => Promise<void>;
  children: ComponentChildren;
}) {
  return (
    <form
      aria-labelledby={id}
      onSubmit={(e) => {
        e.preventDefault();
        void onSubmit();
      }}
    >
      <h2 id={id}>{title}</h2>
      {children}
      <button type="submit" disabled={busy}>
        {button}
      </button>
    </form>
  );
}
