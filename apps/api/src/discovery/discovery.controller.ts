import { Controller, Get, Header, Param } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AppConfig } from '@lockstep/config';
import { DomainError, ERROR_CATALOG, ERROR_CODES, ErrorCode, isErrorCode } from '@lockstep/contracts';
import { Public } from '../common/auth/auth.decorators';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const inlineCode = (text: string) => escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Lockstep</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#1d2330}code{background:#eef1f6;padding:.1em .3em;border-radius:4px}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #dde2ea;padding:.4rem;text-align:left;vertical-align:top}a{color:#2457c5}</style>
</head><body>${body}</body></html>`;
}

/** The plain-text discovery index (`/`, `/llms.txt`) and the error pages every `doc_url` points at. */
@ApiExcludeController()
@Public()
@Controller()
export class DiscoveryController {
  constructor(private readonly config: AppConfig) {}

  @Get(['', 'llms.txt'])
  @Header('Content-Type', 'text/plain; charset=utf-8')
  index(): string {
    const base = `${this.config.publicUrl}/v1`;
    return [
      '# Lockstep',
      '',
      'Lockstep keeps two connected apps (a left and a right side: PostgreSQL, MySQL/MariaDB) equal, ' +
        'one way or both,',
      'and copies tables one way into a destination on a schedule (live export).',
      '',
      `Base URL: ${base}`,
      `OpenAPI 3.1 description: ${base}/openapi.json`,
      `Error codes: ${this.config.publicUrl}/docs/errors`,
      '',
      '## Authentication',
      'Send `Authorization: Bearer <API_KEY>` on every request. Keys are created only by a person ' +
        'signed in to the',
      `console: ${this.config.publicUrl}/app/settings/api-keys (scopes: read < operate < readwrite; ` +
        `optionally limited to one sync).`,
      'A 401 carries a `required_action` to relay to that person.',
      '',
      '## MCP server (for agents)',
      `Model Context Protocol tools (\`sync_*\`, \`live_export_*\`; the same operations as the REST API): ${this.config.publicUrl}/mcp`,
      '(Streamable HTTP, stateless; `Authorization: Bearer <API_KEY>`, same scopes and rate budget as REST).',
      'Client configuration: {"mcpServers": {"lockstep": {"type": "http", "url": "' +
        `${this.config.publicUrl}/mcp` +
        '", "headers": {"Authorization": "Bearer <API_KEY>"}}}}',
      '',
      '## Conventions',
      '- JSON bodies, snake_case fields; errors are `{error: {type, code, message, doc_url, ' +
        'details?, required_action?}}`: branch on `code`.',
      '- Lists are pages `{data, has_more, next_cursor}`; pass `next_cursor` back as `cursor`.',
      '- Follow the `*_url` fields of responses instead of building URLs.',
      '- 120 requests per minute per key; `RateLimit-*` headers on every response; 429 carries ' +
        '`Retry-After`.',
      '- `Idempotency-Key` on creates and mappings writes makes retries safe for 24 hours.',
      '',
      '## Endpoints',
      `- GET ${base}/sync/connectors: the connectors a side can use and the credential fields each declares.`,
      `- POST ${base}/sync/syncs: create a sync (draft); a person reviews and starts it at its ` +
        `\`review_url\`.`,
      `- GET ${base}/sync/operations?sync=...: the record-level change log; GET ` +
        `${base}/sync/issues?sync=...: what failed and how to fix it.`,
      `- GET ${base}/live-export/connectors: connectors with their live export roles (source, ` +
        `destination) and location kind.`,
      `- POST ${base}/live-export/live-exports: create a live export (draft); map, save, then ` +
        `schedule or trigger runs.`,
      '- Every path, field and error code: the OpenAPI description above.',
      '',
    ].join('\n');
  }

  @Get('docs/errors')
  @Header('Content-Type', 'text/html; charset=utf-8')
  errors(): string {
    const rows = ERROR_CODES.map((code) => {
      const entry = ERROR_CATALOG[code];
      return (
        `<tr id="${code}"><td><a ` +
        `href="/docs/errors/${code}"><code>${code}</code></a></td><td>${entry.status}</td><td><code>${entry.type}</code></td><td>${inlineCode(entry.description)}</td></tr>`
      );
    }).join('');
    return page(
      'Error codes',
      `<h1>Lockstep error codes</h1><p>Every error is <code>{"error": {"type", "code", "message", ` +
        `"doc_url", "details"?, "required_action"?}}</code>. Branch on <code>code</code>, never on ` +
        `<code>message</code>.</p><table><thead><tr><th>code</th><th>status</th><th>type</th><th>meaning</th></tr></thead><tbody>${rows}</tbody></table>`,
    );
  }

  @Get('docs/errors/:code')
  @Header('Content-Type', 'text/html; charset=utf-8')
  error(@Param('code') code: string): string {
    if (!isErrorCode(code)) throw new DomainError(ErrorCode.NotFound, `No error code "${code}".`);
    const entry = ERROR_CATALOG[code];
    return page(
      code,
      `<p><a href="/docs/errors">All error codes</a></p><h1><code>${code}</code></h1><p>HTTP ` +
        `${entry.status}, type <code>${entry.type}</code>.</p><p>${inlineCode(entry.description)}</p>`,
    );
  }
}
