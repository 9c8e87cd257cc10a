"""No API returns another user's data (see isolation.py)."""

from __future__ import annotations

from .isolation import run


def test_no_api_returns_another_users_data(tmp_path):
    figures = run(tmp_path / "memory", examples=12)
    assert figures.escapes == 0, figures.notes
    assert figures.inputs > 100
    assert figures.losses == 0, figures.notes
