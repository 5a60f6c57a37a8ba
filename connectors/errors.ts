// Failures a connector reports so the engine can act on them: credentials that no longer work stop the
// connection (`auth_expired`) instead of retrying forever; rate limits wait as long as the source asks.

/** The source refused the credentials (401/403 on auth, IMAP AUTHENTICATIONFAILED, revoked token). */
export class ConnectorAuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConnectorAuthError";
  }
}

/** The source asked to slow down (429, 503 with Retry-After, GitHub secondary limits). */
export class ConnectorRateLimitError extends Error {
  constructor(
    message: string,
    /** How long the source asked to wait; the engine backs off at least this long. */
    readonly retryAfterMs: number,
  ) {
    super(message);
    this.name = "ConnectorRateLimitError";
  }
}

/** Settings that can never work (no such bucket, malformed start URL): fail the sync without retrying. */
export class ConnectorConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConnectorConfigError";
  }
}
