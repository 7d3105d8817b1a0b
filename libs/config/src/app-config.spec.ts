import { ConfigError, loadConfig } from './app-config';

const KEY = Buffer.alloc(32, 1).toString('base64');
const base = { DATABASE_URL: 'postgres://u@h/db', LOCKSTEP_MASTER_KEY: KEY };

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig(base);
    expect(config).toMatchObject({
      PORT: 3000,
      REDIS_URL: 'redis://127.0.0.1:6379',
      RATE_LIMIT_PER_MINUTE: 120,
      RATE_LIMIT_WINDOW_SECONDS: 60,
      EGRESS_ALLOW_PRIVATE: true,
      EGRESS_ALLOW_LOOPBACK: true,
    });
    expect(config.publicUrl).toBe('http://localhost:3000');
  });

  it('reads and converts the environment', () => {
    const config = loadConfig({
      ...base,
      PORT: '8080',
      PUBLIC_URL: 'https://sync.example.com',
      RATE_LIMIT_PER_MINUTE: '600',
      EGRESS_ALLOW_PRIVATE: 'false',
    });
    expect(config.PORT).toBe(8080);
    expect(config.publicUrl).toBe('https://sync.example.com');
    expect(config.RATE_LIMIT_PER_MINUTE).toBe(600);
    expect(config.EGRESS_ALLOW_PRIVATE).toBe(false);
  });

  it('reads the previous master keys of a rotation as a list', () => {
    const other = Buffer.alloc(32, 2).toString('base64');
    expect(loadConfig(base).LOCKSTEP_MASTER_KEY_PREVIOUS).toEqual([]);
    expect(
      loadConfig({ ...base, LOCKSTEP_MASTER_KEY_PREVIOUS: ` ${KEY} , ${other}` })
        .LOCKSTEP_MASTER_KEY_PREVIOUS,
    ).toEqual([KEY, other]);
  });

  it.each([
    [{ DATABASE_URL: undefined }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ LOCKSTEP_MASTER_KEY: 'short' }, 'LOCKSTEP_MASTER_KEY'],
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PUBLIC_URL: 'lockstep.example.com/path' }, 'PUBLIC_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ LOCKSTEP_MASTER_KEY_PREVIOUS: `${KEY},short` }, 'LOCKSTEP_MASTER_KEY_PREVIOUS'],
  ])('refuses %p naming %s', (patch, name) => {
    const env: Record<string, string | undefined> = { ...base, ...patch };
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(name));
  });
});
