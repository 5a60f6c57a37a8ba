// The OAuth apps are declared by the connectors; the env and settings names derived from them are the
// public contract (docs/connectors.md), so an existing deployment's configuration keeps working.

import { describe, expect, it } from "vitest";
import {
  declaredOAuthEnvNames,
  declaredOAuthSettingsPrefixes,
  oauthAppEnvNames,
  oauthSettingsKeys,
} from "../../connectors/oauth-apps.ts";
import { findConnector } from "../../connectors/registry.ts";

describe("declared OAuth apps", () => {
  it("name the service's own apps' env variables once per app (Gmail shares Google Drive's)", () => {
    expect(declaredOAuthEnvNames().sort()).toEqual(
      [
        "GITHUB_CLIENT_ID",
        "GITHUB_CLIENT_SECRET",
        "GOOGLE_CLIENT_ID",
        "GOOGLE_CLIENT_SECRET",
        "MICROSOFT_CLIENT_ID",
        "MICROSOFT_CLIENT_SECRET",
        "NOTION_CLIENT_ID",
        "NOTION_CLIENT_SECRET",
      ].sort(),
    );
  });

  it("name a caller's own apps' settings once per app", () => {
    expect(declaredOAuthSettingsPrefixes().sort()).toEqual(["github", "googleDrive", "notion", "onedrive"]);
  });

  it("derive each connector's names from its declaration", () => {
    const gmail = findConnector("gmail")?.oauth;
    const onedrive = findConnector("onedrive")?.oauth;
    if (!gmail || !onedrive) throw new Error("gmail and onedrive declare OAuth apps");
    expect(oauthAppEnvNames(gmail)).toEqual({
      clientId: "GOOGLE_CLIENT_ID",
      clientSecret: "GOOGLE_CLIENT_SECRET",
    });
    expect(oauthSettingsKeys(gmail)).toEqual({
      clientId: "googleDriveClientId",
      clientSecret: "googleDriveClientSecret",
      customKeyEnabled: "googleDriveCustomKeyEnabled",
    });
    expect(oauthAppEnvNames(onedrive)).toEqual({
      clientId: "MICROSOFT_CLIENT_ID",
      clientSecret: "MICROSOFT_CLIENT_SECRET",
    });
  });
});
