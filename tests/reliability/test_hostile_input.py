"""The hostile input corpus (see corpus.py): our error or a documented degradation for
every input, nothing lost, nothing out of the fence."""

from __future__ import annotations

from .corpus import run


def test_every_hostile_input_gets_our_error_or_a_documented_degradation(tmp_path):
    figures = run(tmp_path / "memory")
    assert figures.inputs > 300
    assert figures.losses == 0, "\n".join(figures.notes)
    assert figures.escapes == 0, "\n".join(figures.notes)
