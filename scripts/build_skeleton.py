"""Write ``langchain_tiered_memory/data/skeleton.json``: the confusable-skeleton tables of
``text/skeleton.py``, computed from the installed ``confusable-homoglyphs`` data.

Shipped so that a process's first fenced context does not spend ~0.3 s building them; they
are used only while the installed data has the digest recorded here (else they are computed
as before). Run it after upgrading ``confusable-homoglyphs`` or changing the skeleton rules;
``tests/test_fence.py`` fails while the shipped file is stale.

    python scripts/build_skeleton.py
"""

from __future__ import annotations

import json

from langchain_tiered_memory.text import skeleton


def main() -> None:
    table = skeleton.build_table()
    data = {
        "digest": skeleton.data_digest(),
        "table": {str(k): v for k, v in sorted(table.items())},
        "final": dict(sorted(skeleton.build_final(table).items())),
    }
    skeleton._SHIPPED.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {skeleton._SHIPPED} ({len(table)} characters)")


if __name__ == "__main__":
    main()
