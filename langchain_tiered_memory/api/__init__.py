"""The facade's grouped sub-APIs (``memory.memories``, ``.episodes``, ``.entities``,
``.threads``, ``.admin``) and the wiring they share (``parts.py``). Nothing is imported
here: the package root loads ``adapters`` at import, which must stay cheap."""
