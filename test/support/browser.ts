import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium (installed by scripts/setup-chromium.sh); CHROMIUM_PATH overrides it. */
export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"];
  const found = candidates.find((p): p is string => Boolean(p && existsSync(p)));
  if (!found) throw new Error("Chromium not found: run scripts/setup-chromium.sh (or set CHROMIUM_PATH)");
  return found;
}

/** A headless Chromium driven by playwright-core; Playwright itself downloads nothing. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Root in CI containers: Chromium's sandbox needs user namespaces that are not there.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}
