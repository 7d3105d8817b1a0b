import { Module } from '@nestjs/common';
import { AppHooksController } from './hooks.controller';

/** The notification endpoint of apps' webhooks (`/hooks/...`). */
@Module({ controllers: [AppHooksController] })
export class HooksModule {}
