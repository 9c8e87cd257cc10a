"""The example notebooks: each runs offline, top to bottom, in under a minute, without a cell
error; the committed copies are built from ``notebooks/build.py`` and carry their outputs, so
they read on GitHub."""

import json
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = [
    "01_replace_conversation_buffer_memory.ipynb",
    "02_langgraph_agent.ipynb",
    "03_forgetting_and_decay.ipynb",
]
CELL_TIMEOUT = 180
#: The issue's bound for one notebook, kernel start included.
NOTEBOOK_SECONDS = 60
#: A warning's category as Python prints it ("…: LangChainDeprecationWarning: …", also
#: PendingDeprecationWarning and LangGraph's LangGraphDeprecatedSinceV10): noise a reader of
#: the notebook must not have to learn to ignore.
DEPRECATION = re.compile(r"\w*Deprecat\w*: ")

sys.path.insert(0, str(NOTEBOOKS))
import build  # noqa: E402


@pytest.fixture
def this_interpreter_kernel(tmp_path, monkeypatch):
    """A ``python3`` kernelspec running this interpreter, first on the Jupyter path (a user's
    own ``python3`` kernelspec would otherwise win)."""
    spec = tmp_path / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.mark.parametrize("name", NAMES)
def test_the_notebook_runs_top_to_bottom_without_an_error(name, this_interpreter_kernel):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # The kernel must be this interpreter (the one with the package installed), not some
    # other python3 on the machine.
    nb.cells.insert(0, nbformat.v4.new_code_cell("import sys; print(sys.executable, end='')"))
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    started = time.monotonic()
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on any error
    elapsed = time.monotonic() - started

    [probe] = nb.cells[0].outputs
    assert Path(probe["text"]).resolve() == Path(sys.executable).resolve()
    for cell in nb.cells:
        assert all(o.output_type != "error" for o in cell.get("outputs", []))
    assert not _deprecations(nb)
    assert elapsed < NOTEBOOK_SECONDS, f"{name} took {elapsed:.0f} s"


@pytest.mark.parametrize("name", NAMES)
def test_the_committed_notebook_is_the_built_one_with_its_outputs(name):
    committed = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(committed)
    built = build.notebook(build.NOTEBOOKS[name]())
    # Edited in build.py, then rebuilt: the committed cells are the generator's.
    assert [(c.cell_type, c.source) for c in committed.cells] == [(c.cell_type, c.source) for c in built.cells]

    code = [c for c in committed.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "run top to bottom once"
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not _deprecations(committed)
    for cell in code:
        if "plt.show()" in cell.source:
            assert any("image/png" in o.get("data", {}) for o in cell.outputs), cell.source[:80]
    # The memory's own Jupyter rendering is in there (contexts, search results, stats).
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any('class="ltm-' in h for h in html)


def _deprecations(nb):
    """The deprecation warnings the notebook's cells printed, with their cell's first line."""
    return [
        (cell.source.splitlines()[0], o.text)
        for cell in nb.cells if cell.cell_type == "code"
        for o in cell.get("outputs", []) if o.output_type == "stream" and DEPRECATION.search(o.text)
    ]
