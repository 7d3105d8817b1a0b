import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AppConfig } from '@lockstep/config';
import { jsonBodyParser } from './body-parsing';

/** Runs the JSON body parser as Nest middleware so its errors reach the error filter. */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  private readonly parse: ReturnType<typeof jsonBodyParser>;

  constructor(config: AppConfig) {
    this.parse = jsonBodyParser(config.MAX_BODY_BYTES);
  }

  async use(request: Request, response: Response, next: NextFunction): Promise<void> {
    await new Promise<void>((resolve, reject) =>
      this.parse(request, response, (error?: unknown) => (error ? reject(error) : resolve())),
    );
    next();
  }
}
