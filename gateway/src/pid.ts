/** Whether a process with this pid exists now (EPERM: it does, as another user). Not whose it is: pids are reused. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
