import { fileURLToPath } from "node:url";

/**
 * Real third-party files the tests read (PDF, Office, images, audio, mail, web pages), kept in the
 * repository with their licences: test/fixtures/README.md says where each came from.
 */
export const FIXTURES_DIR = fileURLToPath(new URL("../fixtures", import.meta.url));
