import { MetadataCache } from './metadata-cache';

describe('MetadataCache', () => {
  let now = 0;
  const clock = () => now;

  beforeEach(() => {
    now = 1_000;
  });

  it('loads once, then serves the cached value (marked cached) until the time to live has passed', async () => {
    const cache = new MetadataCache<string>(60_000, clock);
    let loads = 0;
    const load = jest.fn(async () => `v${(loads += 1)}`);
    expect(await cache.get('t', load)).toEqual({ value: 'v1', cached: false });
    now += 59_999;
    expect(await cache.get('t', load)).toEqual({ value: 'v1', cached: true });
    now += 1;
    expect(await cache.get('t', load)).toEqual({ value: 'v2', cached: false });
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('keeps tables apart, and invalidate / clear / refresh force a new load', async () => {
    const cache = new MetadataCache<string>(60_000, clock);
    let version = 0;
    const load = (table: string) => async () => `${table}${(version += 1)}`;
    await cache.get('a', load('a'));
    await cache.get('b', load('b'));
    expect((await cache.get('a', load('a'))).value).toBe('a1');
    cache.invalidate('a');
    expect(await cache.get('a', load('a'))).toEqual({ value: 'a3', cached: false });
    expect((await cache.get('b', load('b'))).value).toBe('b2');
    expect(await cache.refresh('b', load('b'))).toBe('b4');
    expect(await cache.get('b', load('b'))).toEqual({ value: 'b4', cached: true });
    cache.clear();
    expect(cache.size).toBe(0);
  });

  it('shares one load between concurrent callers', async () => {
    const cache = new MetadataCache<number>(60_000, clock);
    let release: (value: number) => void = () => undefined;
    const load = jest.fn(() => new Promise<number>((resolve) => (release = resolve)));
    const first = cache.get('t', load);
    const second = cache.get('t', load);
    release(7);
    expect((await first).value).toBe(7);
    expect((await second).value).toBe(7);
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('does not cache a failed load', async () => {
    const cache = new MetadataCache<string>(60_000, clock);
    await expect(cache.get('t', async () => Promise.reject(new Error('no such table')))).rejects.toThrow(
      'no such table',
    );
    expect(cache.size).toBe(0);
    expect(await cache.get('t', async () => 'later')).toEqual({ value: 'later', cached: false });
  });

  it('a time to live of 0 never serves a cached value', async () => {
    const cache = new MetadataCache<string>(0, clock);
    const load = jest.fn(async () => 'v');
    await cache.get('t', load);
    expect((await cache.get('t', load)).cached).toBe(false);
    expect(load).toHaveBeenCalledTimes(2);
  });
});
