import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An account: its owner signs in to the console; API keys and syncs belong to it. */
@Entity({ name: 'accounts' })
export class AccountEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ type: 'text', unique: true })
  email: string;

  /** scrypt hash of the owner's password: `scrypt$N$r$p$salt$hash` (base64). */
  @Column({ name: 'password_hash', type: 'text' })
  passwordHash: string;

  @Column({ type: 'text', default: 'free' })
  plan: string;

  @Column({ name: 'api_enabled', type: 'boolean', default: true })
  apiEnabled: boolean;

  /** `active` permits creating and changing syncs; `none` does not. */
  @Column({ type: 'text', default: 'active' })
  subscription: 'active' | 'none';

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
