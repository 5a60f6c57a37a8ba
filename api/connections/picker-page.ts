// The hosted picker: one self-contained page (no build step, nothing from a CDN) that browses the drive
// through /picker/items, keeps the ticked folders and files across folders, and saves them.

import type { ConnectionRow } from "../../store/schema/index.ts";

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch] as string,
  );

const STYLE = `
  :root { color-scheme: light; font-family: system-ui, sans-serif; }
  body { margin: 0 auto; max-width: 44rem; padding: 1rem; color: #1a1a1a; background: #fff; }
  h1 { font-size: 1.4rem; }
  nav ol { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem; padding: 0; }
  nav li + li::before { content: "/"; margin-right: .25rem; color: #555; }
  ul.items { list-style: none; padding: 0; border: 1px solid #bbb; border-radius: .4rem; }
  ul.items li { display: flex; align-items: center; gap: .5rem; padding: .5rem .75rem; border-top: 1px solid #ddd; }
  ul.items li:first-child { border-top: none; }
  ul.items label { flex: 1; overflow-wrap: anywhere; }
  button { font: inherit; padding: .45rem .9rem; border-radius: .3rem; border: 1px solid #1d4ed8; background: #fff; color: #1d4ed8; cursor: pointer; }
  button.primary { background: #1d4ed8; color: #fff; }
  button:focus-visible, input:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
  input[type=checkbox] { width: 1.25rem; height: 1.25rem; }
  .bar { display: flex; gap: .75rem; align-items: center; flex-wrap: wrap; margin-top: 1rem; }
  #status { min-height: 1.5rem; }
  .kind { font-size: .8rem; color: #4b5563; border: 1px solid #d1d5db; border-radius: .25rem; padding: 0 .3rem; }
`;

export function resultPage(title: string, message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></main></body></html>`;
}

export function pickerPage(input: { connection: ConnectionRow; token: string }): string {
  const { connection, token } = input;
  const boot = JSON.stringify({
    connectionId: connection.id,
    token,
    provider: connection.provider,
    selection: connection.selection ?? [],
  }).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Choose what to sync</title>
<style>${STYLE}</style>
</head>
<body>
<main>
  <h1>Choose what to sync from ${escapeHtml(connection.provider)}</h1>
  <p>Open folders to look inside them. Tick the folders and files to sync: a ticked folder syncs everything in it.</p>
  <nav aria-label="Folder path"><ol id="path"></ol></nav>
  <ul class="items" id="items" aria-live="polite" aria-busy="true"></ul>
  <div class="bar">
    <button type="button" class="primary" id="save">Save selection</button>
    <span id="count" role="status"></span>
  </div>
  <p id="status" role="alert"></p>
</main>
<script>
const boot = ${boot};
const picked = new Map(boot.selection.map((item) => [item.id, item]));
const trail = [{ id: null, name: "My files" }];
const base = "/v3/connections/" + encodeURIComponent(boot.connectionId) + "/picker";
const q = "t=" + encodeURIComponent(boot.token);
const $ = (id) => document.getElementById(id);

function showCount() {
  $("count").textContent = picked.size === 1 ? "1 item selected" : picked.size + " items selected";
}

function renderPath() {
  const path = $("path");
  path.replaceChildren();
  trail.forEach((step, index) => {
    const li = document.createElement("li");
    if (index === trail.length - 1) {
      li.textContent = step.name;
      li.setAttribute("aria-current", "page");
    } else {
      const back = document.createElement("button");
      back.type = "button";
      back.textContent = step.name;
      back.addEventListener("click", () => { trail.length = index + 1; load(); });
      li.append(back);
    }
    path.append(li);
  });
}

async function load() {
  renderPath();
  const list = $("items");
  list.setAttribute("aria-busy", "true");
  const parent = trail[trail.length - 1].id;
  const response = await fetch(base + "/items?" + q + (parent ? "&parent=" + encodeURIComponent(parent) : ""));
  const body = await response.json().catch(() => ({}));
  list.replaceChildren();
  list.setAttribute("aria-busy", "false");
  if (!response.ok) { $("status").textContent = (typeof body.error === "string" && body.error) || "Could not list this folder."; return; }
  if (!body.items.length) {
    const li = document.createElement("li");
    li.textContent = "This folder is empty.";
    list.append(li);
  }
  for (const item of body.items) {
    const li = document.createElement("li");
    li.dataset.id = item.id;
    li.dataset.kind = item.kind;
    const box = document.createElement("input");
    box.type = "checkbox";
    box.name = "select";
    box.value = item.id;
    box.id = "pick-" + item.id;
    box.checked = picked.has(item.id);
    box.addEventListener("change", () => {
      if (box.checked) picked.set(item.id, { id: item.id, name: item.name, kind: item.kind, mimeType: item.mimeType });
      else picked.delete(item.id);
      showCount();
    });
    const label = document.createElement("label");
    label.htmlFor = box.id;
    label.textContent = item.name;
    const kind = document.createElement("span");
    kind.className = "kind";
    kind.textContent = item.kind === "folder" ? "folder" : "file";
    label.append(" ", kind);
    li.append(box, label);
    if (item.kind === "folder") {
      const open = document.createElement("button");
      open.type = "button";
      open.textContent = "Open";
      open.setAttribute("aria-label", "Open " + item.name);
      open.addEventListener("click", () => { trail.push({ id: item.id, name: item.name }); load(); });
      li.append(open);
    }
    list.append(li);
  }
}

$("save").addEventListener("click", async () => {
  $("save").disabled = true;
  $("status").textContent = "Saving…";
  const response = await fetch(base + "/selection?" + q, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ items: [...picked.values()] }),
  });
  const body = await response.json().catch(() => ({}));
  $("save").disabled = false;
  if (!response.ok) { $("status").textContent = (typeof body.error === "string" && body.error) || "Could not save."; return; }
  if (body.redirectTo) { window.location.assign(body.redirectTo); return; }
  $("status").textContent = "Saved: " + body.saved + " item(s). The connection is syncing; you can close this window.";
});

showCount();
load();
</script>
</body>
</html>`;
}
