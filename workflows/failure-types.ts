/** Failure types shared by activities (which raise them) and workflows (which react to them). */
export const SUPERSEDED = "Superseded";
export const EXTRACTION_FAILED = "ExtractionFailed";
/** The source refused the connection's credentials: the connection stops until someone reconnects it. */
export const AUTH_EXPIRED = "AuthExpired";
/** Settings that can never work (no such bucket, a deleted connection): no retry. */
export const CONNECTOR_CONFIG = "ConnectorConfig";
