import { Module } from '@nestjs/common';
import { ApiKeysService } from './api-keys.service';
import { KeyGeneration } from './key-generation';

@Module({ providers: [ApiKeysService, KeyGeneration], exports: [ApiKeysService, KeyGeneration] })
export class ApiKeysModule {}
