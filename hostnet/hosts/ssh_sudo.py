"""sudo with a password on an SshHost: one command's exchange (a prompt unique to it, answered once;
a marker saying sudo started the command), the watcher that answers it under invoke, the same for a
streamed channel, and the stdin that holds the command's input back until sudo has started it."""
from __future__ import annotations

import shlex
import threading
import uuid

from invoke.watchers import StreamWatcher

# Under sudo with a password: says on stderr (the marker is $0) that sudo let the command start.
_STARTED = 'printf %s "$0" >&2; exec "$@"'


class SudoExchange:
    """One command's sudo exchange: a prompt and a start marker no output can contain by chance.
    The password answers the prompt once; a second prompt (wrong password) gets no answer, and
    stdin is then closed without the command's input so sudo gives up."""

    def __init__(self, password: str):
        token = uuid.uuid4().hex
        self.prompt, self.marker = f"[hostnet sudo {token}] password: ", f"[hostnet sudo {token} started]"
        self.password = password
        self.answered = self.refused = False
        self.settled = threading.Event()  # the command started, or sudo refused the password

    def command(self, argv: list[str]) -> str:
        """The shell command running argv under sudo -S: the password read from stdin, in answer to
        this exchange's prompt only, and the marker on stderr once the command starts."""
        return shlex.join(["sudo", "-S", "-p", self.prompt, "--", "sh", "-c", _STARTED, self.marker, *argv])

    def answers(self, stream: str) -> list[str]:
        """What to write to the command's stdin, given its stderr so far: the password once."""
        if self.marker in stream:
            self.settled.set()
            return []
        prompts = stream.count(self.prompt)
        if prompts and not self.answered:
            self.answered = True
            return [f"{self.password}\n"]
        if prompts > 1:
            self.refused = True
            self.settled.set()
        return []

    def stderr(self, text: str) -> str:
        """The command's own stderr: what sudo printed before the marker (prompts) is dropped."""
        return text.split(self.marker, 1)[1] if self.marker in text else text.replace(self.prompt, "")


class SudoWatcher(StreamWatcher):
    """An invoke StreamWatcher answering sudo's prompt. invoke calls submit() from its reader threads
    (a StreamWatcher is thread-local: each thread runs __init__ with the same SudoExchange, which
    holds the state they share)."""

    def __init__(self, sudo: SudoExchange):
        super().__init__()
        self.sudo = sudo

    def submit(self, stream: str) -> list[str]:
        return self.sudo.answers(stream)


def answer_sudo(channel, stdin, sudo: SudoExchange) -> str:
    """Read stderr until sudo started the command (or refused), answering its prompt; returns what
    was read. The command writes nothing before it starts, so stdout cannot fill up meanwhile."""
    seen = b""
    while not sudo.settled.is_set():
        data = channel.recv_stderr(1 << 12)
        if not data:  # sudo exited
            break
        seen += data
        for answer in sudo.answers(seen.decode(errors="replace")):
            stdin.write(answer)
            stdin.flush()
    return seen.decode(errors="replace")


class CommandStdin:
    """A file-like stdin for invoke that yields `text` once, then EOF (never blocks on a TTY).
    Under sudo with a password nothing is given before sudo started the command (None: not yet),
    so sudo never reads the input as a password, and nothing at all if sudo refused it."""

    def __init__(self, text: str | None, sudo: SudoExchange | None = None):
        self._data = text or ""  # str: invoke reads one character at a time, never half of one
        self._sudo = sudo

    def read(self, n: int = -1) -> str | None:
        if self._sudo is not None:
            if not self._sudo.settled.is_set():
                return None
            if self._sudo.refused:
                return ""
        chunk, self._data = (self._data, "") if n < 0 else (self._data[:n], self._data[n:])
        return chunk
