import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { type ConsoleConfig, get, type Session, setSession, whenSignedOut } from "./api.ts";
import { ConnectionsPage } from "./pages/connections.tsx";
import { DocumentPage } from "./pages/document.tsx";
import { DocumentsPage } from "./pages/documents.tsx";
import { KeysPage } from "./pages/keys.tsx";
import { MemoriesPage } from "./pages/memories.tsx";
import { ProcessingPage } from "./pages/processing.tsx";
import { SearchPage } from "./pages/search.tsx";
import { SignIn, signOut } from "./pages/sign-in.tsx";
import { linkProps, useRoute } from "./router.ts";
import "./styles.css";

const NAV = [
  { to: "keys", label: "Keys" },
  { to: "documents", label: "Documents" },
  { to: "processing", label: "Processing" },
  { to: "connections", label: "Connections" },
  { to: "search", label: "Search" },
  { to: "memories", label: "Memories" },
];

function App() {
  const [session, setState] = useState<Session | null | undefined>(undefined);
  const [config, setConfig] = useState<ConsoleConfig | null>(null);
  const route = useRoute();

  const signedIn = (s: Session | null) => {
    setSession(s);
    setState(s);
  };

  useEffect(() => {
    whenSignedOut(() => signedIn(null));
    get<Session>("/v3/console/session")
      .then(signedIn)
      .catch(() => signedIn(null));
  }, []);

  useEffect(() => {
    if (session) get<ConsoleConfig>("/v3/console/config").then(setConfig, () => setConfig(null));
  }, [session]);

  if (session === undefined) {
    return (
      <main id="main" class="loading" aria-busy="true">
        Loading…
      </main>
    );
  }
  if (!session) return <SignIn onSignedIn={signedIn} />;

  const [first, sub] = route.path.split("/");
  const section = first || "keys";
  let page = <KeysPage />;
  if (section === "documents" && sub) page = <DocumentPage id={decodeURIComponent(sub)} config={config} />;
  else if (section === "documents") page = <DocumentsPage />;
  else if (section === "processing") page = <ProcessingPage config={config} />;
  else if (section === "connections") page = <ConnectionsPage config={config} />;
  else if (section === "search") page = <SearchPage />;
  else if (section === "memories") page = <MemoriesPage />;

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Memory console</span>
        <nav aria-label="Sections">
          <ul>
            {NAV.map((n) => (
              <li key={n.to}>
                <a {...linkProps(n.to)} aria-current={section === n.to ? "page" : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span title={session.user.kind === "key" ? "Signed in with an admin key" : "Console user"}>
            {session.user.name}
          </span>
          <button type="button" class="secondary" onClick={() => signOut().then(() => signedIn(null))}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" key={route.path}>
        {page}
      </main>
    </>
  );
}

const root = document.getElementById("app");
if (root) render(<App />, root);
