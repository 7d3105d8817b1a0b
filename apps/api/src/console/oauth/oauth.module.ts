import { type DynamicModule, Module } from '@nestjs/common';
import { AppConfig } from '@lockstep/config';
import { CONNECTORS, loadConnectorPlugins } from '@lockstep/connectors-registry';
import { SyncsModule } from '../../syncs/syncs.module';
import { assertOAuthClientsMatch } from './oauth-clients';
import { OAuthConnectService } from './oauth-connect.service';
import { OAuthFlows } from './oauth-flows';
import { OAuthConsoleController } from './oauth.controller';

/**
 * The console's browser sign-in for `oauth` connectors (`/app/oauth/...`). `forRoot` runs while the API's
 * module tree is built, before any provider exists: it registers the connector plugins of `CONNECTOR_PLUGINS`
 * (so the connector catalog and the registry offer them) and checks `OAUTH_CLIENTS` against the connectors.
 * Either failing stops the API at boot with the reason.
 */
@Module({})
export class OAuthConsoleModule {
  static forRoot(config: AppConfig): DynamicModule {
    loadConnectorPlugins(config.CONNECTOR_PLUGINS);
    assertOAuthClientsMatch(config, CONNECTORS);
    return {
      module: OAuthConsoleModule,
      imports: [SyncsModule],
      controllers: [OAuthConsoleController],
      providers: [OAuthConnectService, OAuthFlows],
    };
  }
}
