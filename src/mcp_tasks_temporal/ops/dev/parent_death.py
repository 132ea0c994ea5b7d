"""Children that end when `dev` ends, however it ends (`kill -9` included).

A process killed with SIGKILL runs no cleanup, so its children cannot be
stopped by it: each child must notice by itself. On Linux the kernel does it:
`prctl(PR_SET_PDEATHSIG)` sends the child a signal when its parent dies, and
the setting survives `execve`, so it works for the `temporal` CLI (a Go binary
we cannot change) as well as for Python children. The command is wrapped in a
tiny interpreter that sets it and then execs the real command: same pid, same
open files (the state directory's lock among them), no extra process.

SIGTERM rather than SIGKILL: the Temporal server then closes its SQLite
database cleanly and the worker runs its graceful shutdown.

Elsewhere the wrapper stays as a watchdog: it runs the command as its child,
forwards SIGTERM and SIGINT, and stops it when its own parent goes away.
"""

from __future__ import annotations

import os
import sys
from typing import Final

_LINUX_EXEC: Final = """\
import ctypes, os, signal, sys
parent = int(sys.argv[1])
PR_SET_PDEATHSIG = 1
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
    sys.exit("cannot ask the kernel to stop this process with its parent: errno %d" % ctypes.get_errno())
if os.getppid() != parent:  # the parent died before the request was in place
    sys.exit(1)
os.execv(sys.argv[2], sys.argv[2:])
"""

_WATCHDOG: Final = """\
import os, signal, subprocess, sys, time
parent = int(sys.argv[1])
child = subprocess.Popen(sys.argv[2:], close_fds=False)  # it inherits what was passed to the wrapper
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda number, frame: child.send_signal(number))
while child.poll() is None:
    if os.getppid() != parent:
        child.terminate()
        break
    time.sleep(0.5)
sys.exit(child.wait())
"""


def stopped_with_parent(command: list[str]) -> list[str]:
    """`command` wrapped so that it ends when this process ends; its first item must be a path."""
    code = _LINUX_EXEC if sys.platform == "linux" else _WATCHDOG
    # -I -S: no site packages, no environment: the wrapper starts in a few milliseconds.
    return [sys.executable, "-I", "-S", "-c", code, str(os.getpid()), *command]
