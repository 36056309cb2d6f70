"""hostnet.notebook.stored_outputs: what changes on every execution stripped from a notebook's outputs.
Storing them is exercised by `make notebook-outputs` (tests/notebooks/ compares them with nbval)."""
from hostnet.notebook import stored_outputs


def test_strip_volatile_keeps_outputs_drops_timings():
    nb = {"metadata": {"papermill": {"duration": 3.2}, "language_info": {"name": "python", "version": "3.11.2"}},
          "cells": [{"cell_type": "code", "metadata": {"papermill": {}, "execution": {"iopub.status.idle": "x"},
                                                       "tags": ["parameters"]},
                     "outputs": [{"output_type": "display_data", "metadata": {},
                                  "data": {"text/plain": "1.5", "application/vnd.jupyter.widget-view+json": {}}}],
                     "source": "", "execution_count": 3}]}
    out = stored_outputs.strip_volatile(nb)
    assert out["metadata"] == {"language_info": {"name": "python"}}
    assert out["cells"][0]["metadata"] == {"tags": ["parameters"]}
    assert out["cells"][0]["outputs"][0]["data"] == {"text/plain": "1.5"}
    assert nb["metadata"]["papermill"]  # the input is not modified
