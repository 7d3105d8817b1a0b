import type { SideName, SyncView } from '@lockstep/persistence';
import type { ConnectorCatalog } from '../connectors/connector-catalog';
import { SIDES } from './sync-access';

/**
 * The `user_confirmation` instruction: what the person is asked to do, and what Lockstep writes into each
 * app, per side as its connector declares it. A draft copies no records, but saving the mappings already
 * changed the apps (creates, the service id column), and starting installs change capture.
 */
export function reviewInstruction(
  syncName: string,
  sides: SyncView['sides'],
  catalog: ConnectorCatalog,
): string {
  const written = SIDES.flatMap((side) => {
    const entity = sides[side];
    return entity ? [sideSetup(side, entity.connector, entity.baseName ?? entity.baseId, catalog)] : [];
  });
  return [
    `Ask a person to open this link, sign in to Lockstep, review the sync "${syncName}" and start it.`,
    'Until then it stays a draft and copies no records, but Lockstep does write its setup into the apps:',
    ...written,
    'Once started, records are copied as the mappings say.',
  ].join(' ');
}

function sideSetup(
  side: SideName,
  connector: string,
  base: string | null,
  catalog: ConnectorCatalog,
): string {
  const declaration = catalog.find(connector);
  const where = `${declaration?.displayName ?? connector}${base ? ` "${base}"` : ''}`;
  const setup = declaration?.tableSetup ?? {
    serviceIdColumn: 'a service id column Lockstep keys records by',
    changeCapture: 'what the app needs for Lockstep to notice changes',
  };
  return (
    `On the ${side} side (${where}), saving the mappings creates the tables and fields they mark ` +
    `\`create\` and ` +
    (`adds ${setup.serviceIdColumn} to every mapped table that lacks it (views excepted), whatever its ` +
      `primary key; `) +
    `starting the sync installs ${setup.changeCapture}.`
  );
}
