/**
 * Keeps the launcher's processes (the API, the worker) running: a process that exits while the launcher is not
 * stopping is restarted after the delay `RestartPolicy` gives, with a log line, and the others keep serving.
 * When one process crashes too often within the window, `onGiveUp` is called (the launcher then stops
 * everything). Each process has its own crash history.
 */
import type { ChildProcess } from 'node:child_process';
import { onCrash, RESTART_POLICY, type RestartPolicy } from './restart-policy';

export interface SupervisorLog {
  info(line: string): void;
  warn(line: string): void;
}

interface Supervised {
  name: string;
  start: () => ChildProcess;
  child: ChildProcess | null;
  crashes: number[];
  timer: NodeJS.Timeout | null;
}

/** How long a process may take to stop after SIGTERM before it is killed. */
const STOP_GRACE_MS = 20_000;

export class Supervisor {
  private readonly processes: Supervised[] = [];
  private stopping = false;

  constructor(
    private readonly log: SupervisorLog,
    private readonly onGiveUp: (name: string) => void,
    private readonly policy: RestartPolicy = RESTART_POLICY,
  ) {}

  /** Starts a process and keeps it running; `start` spawns it (again after each crash). */
  add(name: string, start: () => ChildProcess): void {
    const entry: Supervised = { name, start, child: null, crashes: [], timer: null };
    this.processes.push(entry);
    this.launch(entry);
  }

  /** Stops restarting, sends SIGTERM to every process and waits until all have exited. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.processes.map((entry) => this.terminate(entry)));
  }

  private launch(entry: Supervised): void {
    const child = entry.start();
    entry.child = child;
    this.log.info(`${entry.name} started (pid ${child.pid})`);
    child.once('exit', (code, signal) => this.exited(entry, signal ?? String(code)));
  }

  private exited(entry: Supervised, how: string): void {
    entry.child = null;
    if (this.stopping) return;
    const { decision, crashes } = onCrash(entry.crashes, Date.now(), this.policy);
    entry.crashes = crashes;
    const window = `${this.policy.windowMs / 1000} s`;
    if (decision.action === 'give-up') {
      this.log.warn(`${entry.name} exited (${how}): ${decision.crashes} crashes within ${window}; stopping`);
      this.onGiveUp(entry.name);
      return;
    }
    this.log.warn(
      `${entry.name} exited (${how}); restarting it in ${decision.delayMs / 1000} s ` +
        `(crash ${decision.crashes} within ${window}; ${this.policy.maxCrashes} stop the service)`,
    );
    entry.timer = setTimeout(() => {
      entry.timer = null;
      if (!this.stopping) this.launch(entry);
    }, decision.delayMs);
  }

  private async terminate(entry: Supervised): Promise<void> {
    if (entry.timer) clearTimeout(entry.timer);
    const child = entry.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(killer);
  }
}
