"""An SshHost's ProxyCommand (ssh_config's, or the embedded testbed's `ip netns exec ... nc %h %p`): its
tokens filled in, and the command run here as the socket paramiko connects over, which says a
command that ended as a closed socket at once (paramiko's own spins a CPU for good)."""
from __future__ import annotations

import getpass
import os
import re
import select
import socket
import subprocess
import time

import paramiko


class ProxySocket(paramiko.ProxyCommand):
    """paramiko's ProxyCommand as the socket, fixed where it hangs: once the command exits, its
    recv() selects a readable EOF forever and spins a CPU without ever telling the transport the link
    is gone (paramiko #1277, PR #1180 unmerged), so every call waits out its channel timeout; close()
    reaps the command and its pipes (#1713, #1715)."""

    def recv(self, size):
        buffer, start = b"", time.monotonic()
        try:
            while len(buffer) < size:
                wait = None
                if self.timeout is not None:
                    wait = self.timeout - (time.monotonic() - start)
                    if wait <= 0:
                        if buffer:
                            return buffer
                        raise socket.timeout()
                ready, _, _ = select.select([self.process.stdout], [], [], wait)
                if ready:
                    data = os.read(self.process.stdout.fileno(), size - len(buffer))
                    if not data:  # EOF: the command ended; b"" is how a socket says so
                        return buffer
                    buffer += data
            return buffer
        except socket.timeout:  # an OSError too, but the transport's idle tick, not a failure
            raise
        except (OSError, ValueError) as exc:  # closed under the transport's reader
            raise paramiko.ProxyCommandFailure(" ".join(self.cmd), getattr(exc, "strerror", str(exc))) from exc

    def close(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(2)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                pipe.close()
            except OSError:
                pass


def proxy_socket(command: str) -> ProxySocket:
    """The socket paramiko connects over: `command` run here (ProxySocket)."""
    return ProxySocket(command)


def proxy_tokens(command: str, host) -> str:
    """ssh_config's %h, %p, %r and %% in a ProxyCommand, filled in here: fabric parses a gateway string
    as a config of its own without the Port, so its %p would always be 22. Returns the command to run."""
    return re.sub(r"%[hpr%]", lambda m: {"%h": host.address, "%p": str(host.port), "%r": host.user or getpass.getuser(),
                                           "%%": "%"}[m.group(0)], command)
