/**
 * Connectors sync outside sources into documents. The engine knows them only through this
 * registry (provider slug -> connector); providers arrive with the connector issues.
 */
export interface Connector {
  readonly provider: string;
}

const registry = new Map<string, Connector>();

export function registerConnector(connector: Connector): void {
  if (registry.has(connector.provider))
    throw new Error(`connector ${connector.provider} is already registered`);
  registry.set(connector.provider, connector);
}

export function getConnector(provider: string): Connector | undefined {
  return registry.get(provider);
}

export function listConnectors(): string[] {
  return [...registry.keys()].sort();
}
