"""Host (hostnet.hosts.base): the default stream goes through run() and hands the output over whole."""
from conftest import FakeHost


def collect(chunks):
    return b"".join(chunks)


def test_default_stream_goes_through_run():
    host = FakeHost(handlers={"perf": lambda argv, h: (0, "line\n", "warn\n")})
    res, out = host.stream(["perf", "script"], collect, check=False)
    assert (out, res.stdout, res.stderr, host.commands) == (b"line\n", "", "warn\n", [["perf", "script"]])


def test_a_private_file_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """The testbed state file and the machine ledger: 0600, never through a symlink, and on a full
    disk no .tmp left and an error naming the file."""
    import errno
    import os

    import pytest

    from hostnet.hosts import base
    target = tmp_path / "r1.json"
    base.write_private(target, b"{}")
    assert target.read_bytes() == b"{}" and (target.stat().st_mode & 0o777) == 0o600
    (tmp_path / "r2.json.tmp").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        base.write_private(tmp_path / "r2.json", b"{}")
    assert not (tmp_path / "elsewhere").exists()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(base.os, "fsync", full)
    with pytest.raises(OSError) as exc:
        base.write_private(tmp_path / "r3.json", b"{}")
    assert exc.value.errno == errno.ENOSPC and exc.value.filename == str(tmp_path / "r3.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r1.json"]
