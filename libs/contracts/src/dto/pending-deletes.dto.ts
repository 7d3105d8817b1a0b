import { ApiProperty } from '@nestjs/swagger';

export class SurvivingCopyDto {
  @ApiProperty({ example: 'rec_0123456789abcdefghij', description: 'The record (`rec_` id).' }) id: string;
  @ApiProperty({ description: "The surviving copy's id in the connected app." }) remote_id: string;
  @ApiProperty({ type: String, nullable: true, description: 'Display name.' }) name: string | null;
  @ApiProperty({
    enum: ['left', 'right'],
    description: 'The side holding the surviving copy (`delete_from_side`).',
  })
  side: string;
  @ApiProperty({ format: 'uri', description: 'Opens the surviving copy.' }) browser_url: string;
}

/** A delete held for review (spec 2.13). */
export class PendingDeleteDto {
  @ApiProperty({ example: 'pdel_0123456789abcdefghij' }) id: string;
  @ApiProperty({ enum: ['awaiting_review', 'ignored'] }) state: string;
  @ApiProperty({ example: 'rec_0123456789abcdefghij' }) record_id: string;
  @ApiProperty({ enum: ['left', 'right'], description: 'The side where the record went missing.' })
  missing_side: string;
  @ApiProperty({ enum: ['left', 'right'], description: 'The side an approval deletes the record from.' })
  delete_from_side: string;
  @ApiProperty({ type: String, format: 'date-time' }) pending_since: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When a person ignored it (state `ignored`).',
  })
  ignored_at: string | null;
  @ApiProperty({
    type: SurvivingCopyDto,
    nullable: true,
    description: 'The surviving copy; null when the other side no longer holds a copy either.',
  })
  record: SurvivingCopyDto | null;
  @ApiProperty({ format: 'uri', description: 'The record status document.' }) record_url: string;
  @ApiProperty({
    format: 'uri',
    description: 'Page where a person approves, ignores or restores it. The API cannot decide.',
  })
  review_url: string;
}

export class PendingDeleteListDto {
  @ApiProperty({ type: [PendingDeleteDto] }) data: PendingDeleteDto[];
  @ApiProperty() has_more: boolean;
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}
