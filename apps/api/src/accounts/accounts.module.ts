import { Module } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { AccountsService } from './accounts.service';

@Module({ imports: [ApiKeysModule], providers: [AccountsService], exports: [AccountsService] })
export class AccountsModule {}
