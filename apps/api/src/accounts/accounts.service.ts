import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { QueryFailedError, type Repository } from 'typeorm';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { newId } from '@lockstep/domain';
import { PLANS, isPlan } from '@lockstep/domain';
import { AccountEntity } from '@lockstep/persistence';
import { KeyGeneration } from '../api-keys/key-generation';
import { hashPassword, verifyPassword } from './password';

export interface AccountView {
  id: string;
  email: string;
  plan: string;
  api_enabled: boolean;
  subscription: 'active' | 'none';
  created_at: string;
}

export interface CreateAccountInput {
  email: string;
  password: string;
  plan?: string;
  apiEnabled?: boolean;
  subscription?: 'active' | 'none';
}

export interface UpdateAccountInput {
  plan?: string;
  apiEnabled?: boolean;
  subscription?: 'active' | 'none';
  password?: string;
}

function toView(account: AccountEntity): AccountView {
  return {
    id: account.id,
    email: account.email,
    plan: account.plan,
    api_enabled: account.apiEnabled,
    subscription: account.subscription,
    created_at: account.createdAt.toISOString(),
  };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * Accounts: created by an operator (CLI) for now; the owner signs in to the console with email and password.
 */
@Injectable()
export class AccountsService {
  constructor(
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
    private readonly generation: KeyGeneration,
  ) {}

  async create(input: CreateAccountInput): Promise<AccountView> {
    const email = input.email.trim().toLowerCase();
    if (!EMAIL.test(email))
      throw new DomainError(ErrorCode.InvalidRequest, `"${input.email}" is not an email address.`);
    if (input.password.length < 8)
      throw new DomainError(ErrorCode.InvalidRequest, 'The password needs at least 8 characters.');
    this.checkPlan(input.plan);
    const entity = this.accounts.create({
      id: newId('account'),
      email,
      passwordHash: await hashPassword(input.password),
      plan: input.plan ?? 'free',
      apiEnabled: input.apiEnabled ?? true,
      subscription: input.subscription ?? 'active',
    });
    try {
      await this.accounts.insert(entity);
    } catch (error) {
      if (
        error instanceof QueryFailedError &&
        (error as QueryFailedError & { code?: string }).code === '23505'
      ) {
        throw new DomainError(ErrorCode.Conflict, `An account with email ${email} already exists.`);
      }
      throw error;
    }
    return toView(await this.get(entity.id));
  }

  async update(id: string, input: UpdateAccountInput): Promise<AccountView> {
    const account = await this.get(id);
    this.checkPlan(input.plan);
    if (input.plan !== undefined) account.plan = input.plan;
    if (input.apiEnabled !== undefined) account.apiEnabled = input.apiEnabled;
    if (input.subscription !== undefined) account.subscription = input.subscription;
    if (input.password !== undefined) account.passwordHash = await hashPassword(input.password);
    account.updatedAt = new Date();
    await this.accounts.save(account);
    // The API processes' cached keys carry the account's plan, admission and subscription.
    await this.generation.bump();
    return toView(account);
  }

  async view(id: string): Promise<AccountView> {
    return toView(await this.get(id));
  }

  /** Email and password check for the console's sign-in; null when either is wrong. */
  async verifyCredentials(email: string, password: string): Promise<AccountView | null> {
    const account = await this.accounts.findOne({ where: { email: email.trim().toLowerCase() } });
    if (!account) {
      await hashPassword(password); // same work either way: no user enumeration by timing
      return null;
    }
    return (await verifyPassword(password, account.passwordHash)) ? toView(account) : null;
  }

  private async get(id: string): Promise<AccountEntity> {
    const account = await this.accounts.findOne({ where: { id } });
    if (!account) throw new DomainError(ErrorCode.NotFound, `No account ${id}.`);
    return account;
  }

  private checkPlan(plan: string | undefined): void {
    if (plan !== undefined && !isPlan(plan)) {
      throw new DomainError(
        ErrorCode.InvalidRequest,
        `Unknown plan "${plan}"; plans are ${PLANS.join(', ')}.`,
      );
    }
  }
}
