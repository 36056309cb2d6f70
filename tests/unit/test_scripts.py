"""The project's shell scripts: kernel_patch/lib.sh's package queries are total (a missing
package is an empty answer, not the end of the script), every `set -e` script names the command
that ended it, and the fresh-machine rehearsal removes only what the project recorded installing."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO

NO_SUCH_PACKAGE = "hostnet-no-such-package-0qz"  # Debian names are lower case: this one cannot exist
needs_dpkg = pytest.mark.skipif(not shutil.which("dpkg-query"), reason="needs dpkg-query (Debian)")
needs_apt = pytest.mark.skipif(not shutil.which("apt-cache"), reason="needs apt-cache (Debian)")


def bash(script: str, env: dict | None = None, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=120)


def with_lib(body: str) -> str:
    """A `set -euo pipefail` script that sources lib.sh, runs body, and says it got to the end."""
    return f"set -euo pipefail\nsource kernel_patch/lib.sh\n{body}\necho REACHED-END\n"


@needs_dpkg
def test_installed_version_of_a_missing_package_is_empty_and_succeeds():
    res = bash(with_lib(f'v=$(kp_installed_version {NO_SUCH_PACKAGE})\necho "[$v]"'))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["[]", "REACHED-END"]
    assert res.stderr == ""


@needs_dpkg
def test_installed_version_of_an_installed_package_is_its_version():
    res = bash(with_lib("kp_installed_version dpkg"))
    want = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "dpkg"], capture_output=True, text=True).stdout
    assert res.returncode == 0 and res.stdout.splitlines() == [want, "REACHED-END"]


@needs_apt
def test_candidate_and_installable_for_a_missing_package_answer_without_ending_the_script():
    res = bash(with_lib(f'c=$(kp_candidate {NO_SUCH_PACKAGE})\necho "[$c]"\n'
                        f'if kp_installable {NO_SUCH_PACKAGE} 1.0; then echo yes; else echo no; fi'))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["[]", "no", "REACHED-END"]


@needs_dpkg
def test_need_packages_with_nothing_missing_installs_nothing(tmp_path):
    res = bash(with_lib("kp_need_packages dpkg"), env={"HOSTNET_INSTALLED": str(tmp_path / "m")})
    assert res.returncode == 0 and "installing" not in res.stdout
    assert not (tmp_path / "m").exists()


def test_a_failing_command_names_itself_file_line_and_status(tmp_path):
    script = tmp_path / "dies.sh"
    script.write_text(f"set -euo pipefail\nsource {REPO}/scripts/common.sh\necho before\n"
                      "ls /nonexistent-hostnet-path\necho after\n")
    res = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert res.returncode == 2 and res.stdout == "before\n"
    assert f"{script}: line 4: `ls /nonexistent-hostnet-path` failed (exit 2)" in res.stderr


def test_a_failure_inside_a_function_and_pipeline_is_named_where_it_happened(tmp_path):
    script = tmp_path / "pipe.sh"
    script.write_text(f"set -euo pipefail\nsource {REPO}/scripts/common.sh\n"
                      "f() {\n  false | cat\n}\nx=$(f)\necho after\n")
    res = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert res.returncode == 1 and "after" not in res.stdout
    assert re.search(r"line 4: `cat` failed \(exit 1; pipeline stages: 1 0\)", res.stderr), res.stderr
    assert "line 6: `x=$(f)` failed (exit 1)" in res.stderr


def project_scripts():
    """Every shell script of the project: *.sh under scripts/ and kernel_patch/, and .ci/run."""
    found = [p for d in ("scripts", "kernel_patch") for p in (REPO / d).glob("*.sh")]
    return sorted(found + [REPO / ".ci" / "run"])


def test_every_set_e_script_reports_the_command_that_ended_it():
    """Sources scripts/common.sh itself, or kernel_patch/lib.sh (which does)."""
    scripts = project_scripts()
    assert len(scripts) >= 6, scripts
    silent = []
    for path in scripts:
        text = path.read_text()
        if path.name == "common.sh" or not re.search(r"^set -[a-z]*e", text, re.M):
            continue
        if not re.search(r"^source .*(scripts/common\.sh|/common\.sh\"|/lib\.sh\")", text, re.M):
            silent.append(path.relative_to(REPO))
    assert not silent, f"set -e scripts without the ERR trap: {silent}"
    assert 'source "$KP_DIR/../scripts/common.sh"' in (REPO / "kernel_patch" / "lib.sh").read_text()


def test_installed_packages_are_recorded_once_each(tmp_path):
    manifest = tmp_path / "state" / "installed"
    res = bash("set -euo pipefail\nsource scripts/common.sh\n"
               "hostnet_record_installed iperf3 linux-source-6.12=6.12.117-1~deb12u1\n"
               "hostnet_record_installed iperf3 sockperf\n", env={"HOSTNET_INSTALLED": str(manifest)})
    assert res.returncode == 0, res.stderr
    assert manifest.read_text().splitlines() == ["iperf3", "linux-source-6.12", "sockperf"]


@needs_dpkg
@pytest.mark.skipif(os.geteuid() != 0, reason="the rehearsal runs as root only")
def test_fresh_machine_dry_run_plans_only_recorded_installed_packages(tmp_path):
    manifest = tmp_path / "installed"
    manifest.write_text(f"dpkg\n{NO_SUCH_PACKAGE}\ndpkg\n")
    res = subprocess.run([str(REPO / "scripts" / "fresh-machine.sh"), "--dry-run"], capture_output=True, text=True,
                         env={**os.environ, "HOSTNET_INSTALLED": str(manifest),
                              "HOSTNET_KERNEL_WORK": str(tmp_path / "kernel"),
                              "HOSTNET_GUEST_KERNEL": str(tmp_path / "guest")}, timeout=60)
    assert res.returncode == 0, res.stderr
    plan = dict(line.split(": ", 1) for line in res.stdout.splitlines() if line.startswith("would "))
    purge = plan["would purge"].split()
    assert purge.count("dpkg") == 1 and NO_SUCH_PACKAGE not in purge
    assert plan["would remove"].split() == [str(REPO / ".venv"), str(REPO / ".venv-floors"),
                                            str(REPO / "hostnet/native/build"), str(tmp_path / "kernel"),
                                            str(tmp_path / "guest")]
    assert manifest.exists()  # a dry run changes nothing


@pytest.mark.skipif(os.geteuid() != 0, reason="the rehearsal runs as root only")
def test_fresh_machine_refuses_an_unknown_ref_before_removing_anything(tmp_path):
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    res = subprocess.run([str(REPO / "scripts" / "fresh-machine.sh"), "--dry-run", "no-such-ref-0qz"],
                         capture_output=True, text=True, env={**os.environ, "HOSTNET_KERNEL_WORK": str(kernel)})
    assert res.returncode == 2 and "no-such-ref-0qz is not a commit" in res.stderr
    assert kernel.exists()
