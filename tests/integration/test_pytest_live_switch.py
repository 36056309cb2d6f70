"""tests/conftest.py's live switch, in a pytest of its own over a copy of the conftest: live tests
run only when asked for, and the summary says how many were skipped."""
from conftest import REPO


def _pytest_on_a_copy_of_the_conftest(tmp_path, *args, env=None):
    """A tests/ tree with this conftest, one unit test and one live test that leaves a file when it runs."""
    import os
    import shutil
    import subprocess
    import sys
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    live: root\n")
    (tmp_path / "unit").mkdir(exist_ok=True)
    (tmp_path / "unit" / "test_u.py").write_text("def test_u():\n    pass\n")
    (tmp_path / "live").mkdir(exist_ok=True)
    (tmp_path / "live" / "test_live_x.py").write_text(
        "import pathlib\nimport pytest\npytestmark = pytest.mark.live\n\n"
        "def test_x():\n    pathlib.Path(__file__).with_name('ran').write_text('')\n")
    environ = {k: v for k, v in os.environ.items() if k != "HOSTNET_LIVE"}
    # without nbval's plugin: it imports nbformat, and with it jsonschema's 2.7 s of grammars
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:nbval", *args],
                          cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_live_tests_run_only_when_asked_for_and_the_summary_says_how_many_were_skipped(tmp_path):
    from conftest import LIVE_OFF
    plain = _pytest_on_a_copy_of_the_conftest(tmp_path)
    assert "1 passed, 1 skipped" in plain.stdout and not (tmp_path / "live" / "ran").exists()
    assert f"hostnet: 1 live tests skipped ({LIVE_OFF})" in plain.stdout
    assert "--live" in LIVE_OFF and "HOSTNET_LIVE=1" in LIVE_OFF
    for how in (("--live",), ()):
        (tmp_path / "live" / "ran").unlink(missing_ok=True)
        res = _pytest_on_a_copy_of_the_conftest(tmp_path, *how, env={} if how else {"HOSTNET_LIVE": "1"})
        assert "2 passed" in res.stdout and (tmp_path / "live" / "ran").exists(), res.stdout
        assert "live tests skipped" not in res.stdout
