// The `repositories` setting: a comma-separated `owner/name` list, written by configure from picked
// resources. Names are checked strictly because they end up in API paths and document ids.

import { ConnectorConfigError } from "../errors.ts";

// Owners on Enterprise Managed Users carry an `_shortcode` suffix, so underscores are allowed.
const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,99})$/;
const NAME = /^[A-Za-z0-9_.-]{1,100}$/;

export function isRepositoryName(value: string): boolean {
  const [owner, name, ...rest] = value.split("/");
  return (
    rest.length === 0 &&
    owner !== undefined &&
    name !== undefined &&
    OWNER.test(owner) &&
    NAME.test(name) &&
    name !== "." &&
    name !== ".."
  );
}

/** The list in order, without blanks and repeats; `error` names the first malformed entry. */
export function parseRepositoryList(value: string): { repositories: string[]; error?: string } {
  const repositories: string[] = [];
  const seen = new Set<string>();
  for (const raw of value.split(",")) {
    const entry = raw.trim();
    if (!entry) continue;
    if (!isRepositoryName(entry)) {
      return { repositories, error: `"${entry}" is not a repository as owner/name` };
    }
    // GitHub names are case-insensitive: Foo/Bar and foo/bar are one repository.
    const key = entry.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    repositories.push(entry);
  }
  return { repositories };
}

/** `configure`: picked resources (`{full_name}` or `{id, full_name}`) to the `repositories` setting. */
export function configureRepositories(resources: Record<string, unknown>[]): { repositories: string } {
  if (!Array.isArray(resources) || resources.length === 0) {
    throw new ConnectorConfigError("pick at least one repository");
  }
  const names = resources.map((resource, index) => {
    const fullName = resource?.full_name;
    if (typeof fullName !== "string" || !isRepositoryName(fullName.trim())) {
      throw new ConnectorConfigError(`resource ${index} has no full_name as owner/name`);
    }
    const id = resource.id;
    if (id !== undefined && !(typeof id === "number" && Number.isInteger(id)) && typeof id !== "string") {
      throw new ConnectorConfigError(`resource ${index} has an id that is neither a number nor a string`);
    }
    return fullName.trim();
  });
  return { repositories: parseRepositoryList(names.join(",")).repositories.join(",") };
}
