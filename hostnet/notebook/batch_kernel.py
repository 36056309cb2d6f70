"""The Jupyter kernel hostnet's batch runs start (papermill's notebooks): ipykernel, minus one import.

jsonschema imports rfc3987_syntax wherever it is installed (jupyter-events asks for
jsonschema[format-nongpl]), and rfc3987_syntax compiles ~40 Earley grammars as it is imported:
1.7 s of CPU on this machine in every kernel and every papermill worker, about a fifth of a
replayed notebook (jsonschema issue 1428). It serves only the "iri" and "iri-reference" formats,
which no schema validated here uses (vega-lite's: uri, uri-reference, color-hex; nbformat's: none).
Marked absent, jsonschema leaves those two formats unchecked and nothing else changes: the replay's
byte-identity test holds the figures and tables to that. A kernel a person starts (JupyterLab) is
ipykernel's own, untouched."""
from __future__ import annotations

import sys
from pathlib import Path

SKIPPED = ("rfc3987_syntax",)


def skip_unused_imports() -> None:
    """Make `import rfc3987_syntax` fail (ImportError, which jsonschema expects), unless it is in already."""
    for name in SKIPPED:
        sys.modules.setdefault(name, None)


def kernel_argv(argv: list[str]) -> list[str]:
    """A kernelspec's command with `-m ipykernel_launcher` run as this module; any other command
    (a kernelspec of the user's that starts something else) as it is."""
    for i in range(len(argv) - 1):
        if argv[i] == "-m" and argv[i + 1] == "ipykernel_launcher":
            return [*argv[:i + 1], "hostnet.notebook.batch_kernel", *argv[i + 2:]]
    return list(argv)


if __name__ == "__main__":
    # as ipykernel_launcher: the working directory (the notebooks') leaves sys.path while ipykernel
    # loads; the kernel's shell puts it back
    if sys.path and (sys.path[0] == "" or Path(sys.path[0]) == Path.cwd()):
        del sys.path[0]
    skip_unused_imports()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
