import { Get, Module } from '@nestjs/common';
import { ConsoleController, consoleNotFound, ConsoleOpen } from './console-session';

/**
 * The console's catch-all: any other GET under `/app/...` renders the console's 404 page (HTML, status 404,
 * with the navigation when signed in) instead of the API's JSON 404. Open: an unknown path is a 404 whether
 * or not someone is signed in. Express matches routes in registration order; Nest registers them module by
 * module, first the modules AppModule imports (in order), then the modules those import. So this module is
 * imported LAST in AppModule and every console controller must sit in a module AppModule imports directly
 * (ConsoleModule, OAuthConsoleModule): a controller of a module nested deeper would be registered after this
 * catch-all and never be reached (the console tests open every console page, so that would show). (It lives
 * with the live export pages because it came with them: their pending action links were the console paths
 * that had no page.)
 */
@ConsoleController()
export class ConsoleNotFoundController {
  @Get('{*path}')
  @ConsoleOpen()
  notFound(): never {
    throw consoleNotFound();
  }
}

@Module({ controllers: [ConsoleNotFoundController] })
export class ConsoleFallbackModule {}
