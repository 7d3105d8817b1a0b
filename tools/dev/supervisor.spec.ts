import { spawn } from 'node:child_process';
import { Supervisor } from './supervisor';

/** Real child processes (`node -e`), a fast policy: the wiring of restarts, give-up and stop. */
describe('Supervisor', () => {
  const policy = { windowMs: 60_000, maxCrashes: 3, baseDelayMs: 10, maxDelayMs: 40 };
  const node = (code: string) => () => spawn(process.execPath, ['-e', code], { stdio: 'ignore' });

  function recorder() {
    const lines: string[] = [];
    return {
      lines,
      log: { info: (line: string) => lines.push(line), warn: (line: string) => lines.push(line) },
    };
  }

  it('restarts a crashing process with a log line each time and gives up at the limit', async () => {
    const { lines, log } = recorder();
    const gaveUp = new Promise<string>((resolve) => {
      new Supervisor(log, resolve, policy).add('crasher', node('process.exit(3)'));
    });
    expect(await gaveUp).toBe('crasher');
    expect(lines.filter((line) => /^crasher started \(pid \d+\)$/.test(line))).toHaveLength(3);
    expect(lines.filter((line) => line.startsWith('crasher exited (3); restarting it in '))).toEqual([
      'crasher exited (3); restarting it in 0.01 s (crash 1 within 60 s; 3 stop the service)',
      'crasher exited (3); restarting it in 0.02 s (crash 2 within 60 s; 3 stop the service)',
    ]);
    expect(lines[lines.length - 1]).toBe('crasher exited (3): 3 crashes within 60 s; stopping');
  });

  it('keeps the other process running while one is restarted, and stop() ends both without a restart', async () => {
    const { lines, log } = recorder();
    const supervisor = new Supervisor(log, () => undefined, { ...policy, maxCrashes: 100 });
    supervisor.add('steady', node('setInterval(() => undefined, 1000)'));
    supervisor.add('flaky', node('setTimeout(() => process.exit(1), 20)'));
    const steadyPid = Number(/steady started \(pid (\d+)\)/.exec(lines.join('\n'))![1]);
    const deadline = Date.now() + 20_000;
    while (lines.filter((line) => line.startsWith('flaky started')).length < 3 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(lines.filter((line) => line.startsWith('flaky started')).length).toBeGreaterThanOrEqual(3);
    expect(() => process.kill(steadyPid, 0)).not.toThrow();
    expect(lines.filter((line) => line.startsWith('steady'))).toHaveLength(1);

    await supervisor.stop();
    expect(() => process.kill(steadyPid, 0)).toThrow();
    const after = lines.length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(lines.slice(after).filter((line) => line.includes('started'))).toEqual([]);
  });
});
