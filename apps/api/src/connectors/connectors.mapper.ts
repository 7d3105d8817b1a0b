import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import type { ConnectorDto } from '@lockstep/contracts';
import { planIncludes } from '@lockstep/domain';

export function toConnectorDto(connector: ConnectorDeclaration, accountPlan: string): ConnectorDto {
  const { auth, capabilities } = connector;
  return {
    type: connector.type,
    name: connector.displayName,
    auth: {
      method: auth.method,
      fields:
        auth.method === 'api_key'
          ? auth.fields.map((f) => ({
              id: f.id,
              label: f.label,
              optional: f.optional,
              placeholder: f.placeholder,
              options: f.options,
              help: { label: f.help.label, url: f.help.url },
            }))
          : null,
    },
    available: planIncludes(accountPlan, connector.plan),
    required_plan: connector.plan,
    capabilities: {
      create_tables: capabilities.createTables,
      create_fields: capabilities.createFields,
      views: capabilities.views,
      change_detection: [...capabilities.changeDetection],
      sync_to_itself: capabilities.syncToItself,
    },
  };
}
