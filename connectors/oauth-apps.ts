// The OAuth apps the connectors declare (`Connector.oauth`), and the names under which an operator or a
// caller configures them: the service's own app in the environment, a caller's own app in /v3/settings.
// config/env.ts and api/settings derive their fields from here, so a new OAuth provider is its own
// folder plus its registry line.

import { allConnectors } from "./registry.ts";
import type { OAuthSpec } from "./types.ts";

/** The env variables of the service's own app for this spec. */
export function oauthAppEnvNames(spec: Pick<OAuthSpec, "envPrefix">): {
  clientId: string;
  clientSecret: string;
} {
  return { clientId: `${spec.envPrefix}_CLIENT_ID`, clientSecret: `${spec.envPrefix}_CLIENT_SECRET` };
}

/** The /v3/settings keys of a caller's own app for this spec. */
export function oauthSettingsKeys(spec: Pick<OAuthSpec, "settingsPrefix">): {
  clientId: string;
  clientSecret: string;
  customKeyEnabled: string;
} {
  return {
    clientId: `${spec.settingsPrefix}ClientId`,
    clientSecret: `${spec.settingsPrefix}ClientSecret`,
    customKeyEnabled: `${spec.settingsPrefix}CustomKeyEnabled`,
  };
}

function declaredSpecs(): OAuthSpec[] {
  return allConnectors().flatMap((connector) => (connector.oauth ? [connector.oauth] : []));
}

/** Every env variable of the service's own OAuth apps; connectors sharing an app (Gmail, Google Drive) name it once. */
export function declaredOAuthEnvNames(): string[] {
  const names = declaredSpecs().flatMap((spec) => Object.values(oauthAppEnvNames(spec)));
  return [...new Set(names)];
}

/** Every settings prefix of a caller's own OAuth apps, once each, in registration order. */
export function declaredOAuthSettingsPrefixes(): string[] {
  return [...new Set(declaredSpecs().map((spec) => spec.settingsPrefix))];
}
