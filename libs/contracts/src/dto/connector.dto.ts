import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class AuthFieldHelpDto {
  @ApiProperty() label: string;
  @ApiProperty({ format: 'uri' }) url: string;
}

export class AuthFieldDto {
  @ApiProperty({ description: "Key to send under a side's `auth`, exactly as given." }) id: string;
  @ApiProperty() label: string;
  @ApiProperty() optional: boolean;
  @ApiProperty() placeholder: string;
  @ApiProperty({ type: [String], nullable: true }) options: string[] | null;
  @ApiProperty({ type: AuthFieldHelpDto }) help: AuthFieldHelpDto;
}

export class ConnectorAuthDto {
  @ApiProperty({ enum: ['oauth', 'api_key'] }) method: 'oauth' | 'api_key';
  @ApiProperty({
    type: [AuthFieldDto],
    nullable: true,
    description: 'Array for `api_key`, null for `oauth`.',
  })
  fields: AuthFieldDto[] | null;
}

export class ConnectorCapabilitiesDto {
  @ApiProperty({ description: 'The connector can create tables (`{create: {name}}` on a table reference).' })
  create_tables: boolean;
  @ApiProperty({ description: 'The connector can create fields.' }) create_fields: boolean;
  @ApiProperty({ description: 'Tables may be synced through views (spec 2.7).' }) views: boolean;
  @ApiProperty({
    type: [String],
    enum: ['change_feed', 'incremental', 'full_scan'],
    description: 'Change detection modes, best first.',
  })
  change_detection: string[];
  @ApiProperty({ description: 'A sync may join two sides of this connector.' }) sync_to_itself: boolean;
}

export class ConnectorDto {
  @ApiProperty({ description: 'Connector slug, the `connector` value of a side.' }) type: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: ConnectorAuthDto }) auth: ConnectorAuthDto;
  @ApiProperty({ description: "`false` for connectors above the account's plan." }) available: boolean;
  @ApiProperty({ description: 'The plan that unlocks the connector.' }) required_plan: string;
  @ApiProperty({ type: ConnectorCapabilitiesDto }) capabilities: ConnectorCapabilitiesDto;
}

export class ConnectorListDto {
  @ApiProperty({ type: [ConnectorDto] }) data: ConnectorDto[];
  @ApiPropertyOptional({ description: 'Always false: the list is complete.' }) has_more: boolean;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'Always null.' }) next_cursor:
    string | null;
}
