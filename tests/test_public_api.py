"""The package root exports the whole public API, each name documented."""

import inspect

import langchain_tiered_memory as pkg
from langchain_tiered_memory import TieredMemory, TieredMemoryError


def test_every_exported_name_resolves_and_is_documented():
    missing_doc = []
    for name in pkg.__all__:
        obj = getattr(pkg, name)  # lazy adapters import here
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip():
            missing_doc.append(name)
    assert not missing_doc


def test_every_error_is_a_tiered_memory_error_and_exported():
    from langchain_tiered_memory import errors

    ours = [c for c in vars(errors).values() if inspect.isclass(c) and issubclass(c, Exception)]
    assert all(issubclass(c, TieredMemoryError) for c in ours)
    assert {c.__name__ for c in ours} <= set(pkg.__all__)


def test_public_methods_of_tiered_memory_are_documented():
    undocumented = [
        name
        for name, member in inspect.getmembers(TieredMemory)
        if not name.startswith("_") and not (getattr(member, "__doc__", "") or "").strip()
    ]
    assert not undocumented


def test_unknown_names_are_attribute_errors():
    import pytest

    with pytest.raises(AttributeError):
        pkg.NoSuchThing  # noqa: B018
