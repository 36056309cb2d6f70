"""hostnet.native and native.build: the C tools' build commands, locally and on a remote host into a
fresh private directory (a fake host). Compiled and run: tests/integration/test_native_tools.py."""
import pytest

from conftest import FakeHost
from hostnet import native
from hostnet.native import build


def test_no_compiler_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(native.NativeBuildError, match="no C compiler .cc or gcc not found.*install gcc"):
        build.ensure("udpbatch", FakeHost(name="bare", handlers={"test": lambda argv, h: (1, "", "")}))
    with pytest.raises(native.NativeBuildError, match="unknown native tool"):
        native.binary_name("nosuch")


def test_remote_build_goes_through_the_host_into_a_fresh_private_dir():
    """Nothing found on the remote host is trusted: each ensure() builds in a new mktemp -d
    directory (0700, the login user's), even when a binary of the same name exists elsewhere."""
    name = native.binary_name("udpbatch")
    dirs = iter(["/tmp/hostnet-native.aaaa1111", "/tmp/hostnet-native.bbbb2222"])
    compiled = []

    def cc(argv, host):
        compiled.append(argv)
        return 0, "", ""

    host = FakeHost(name="remote", files={f"/tmp/hostnet-native.{d}/{name}.c": "" for d in ("aaaa1111", "bbbb2222")},
                    handlers={"mktemp": lambda argv, h: (0, next(dirs) + "\n", ""), "cc": cc,
                              "test": lambda argv, h: (0, "", "")})  # "a binary is already there"
    first, second = build.ensure("udpbatch", host), build.ensure("udpbatch", host)
    assert (first, second) == (f"/tmp/hostnet-native.aaaa1111/{name}", f"/tmp/hostnet-native.bbbb2222/{name}")
    assert host.files[f"{first}.c"] == native.source("udpbatch")
    assert compiled == [build.compile_argv("cc", f"{p}.c", p) for p in (first, second)]
    assert [c[0] for c in host.commands] == ["mktemp", "cc", "mktemp", "cc"]
    assert host.commands[0] == ["mktemp", "-d", build.REMOTE_TEMPLATE]
    odd = FakeHost(name="odd", handlers={"mktemp": lambda argv, h: (0, "\n", ""), "cc": cc})
    with pytest.raises(native.NativeBuildError, match="mktemp -d gave"):
        build.ensure("udpbatch", odd)


def test_xdp_program_is_built_with_clang_for_bpf(monkeypatch):
    monkeypatch.delenv("CLANG", raising=False)
    assert native.binary_name("xdp_pass").endswith(".o")
    assert build.compile_argv("clang", "x.c", "x.o", bpf=True) == ["clang", "-O2", "-target", "bpf", "-c", "x.c",
                                                                     "-o", "x.o"]
    with pytest.raises(native.NativeBuildError, match="no BPF compiler .clang not found.*XDP program.*install clang"):
        build.ensure("xdp_pass", FakeHost(name="bare", handlers={"cc": lambda argv, h: (0, "", "")}))
