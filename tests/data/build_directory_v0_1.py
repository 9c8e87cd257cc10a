"""How ``directory-v0.1.tar.xz`` was made: run with langchain-tiered-memory 0.1 (commit b1f4158),
whose long-term memories lived only in Qdrant Edge shards (``qdrant/memories``, ``qdrant/episodes``).

    python build_directory_v0_1.py OUT && (cd OUT && rm qdrant/*/LOCK && tar cJf ../directory-v0.1.tar.xz .)

It does not run against today's package: ``tests/test_ownership.py`` opens its output.
"""

import shutil
import sys
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings

out = Path(sys.argv[1])
shutil.rmtree(out, ignore_errors=True)
cfg = MemoryConfig(job_mode="inline", max_tokens=600, system_reserve=50, output_reserve=50)
with TieredMemory(out, cfg, embeddings=HashingEmbeddings()) as m:
    m.after_turn("alice", "t1", [HumanMessage("My name is Alice, I live in Paris and I prefer green tea.", id="m1"),
                                 AIMessage("Noted, Alice.", id="m2")])
    m.after_turn("alice", "t1", [HumanMessage("My budget for the trip is 3000 euros.", id="m3"), AIMessage("Got it.", id="m4")])
    m.memories.remember("alice", "user: I prefer window seats on trains", "preference", importance=0.8, metadata={"src": "manual"})
    m.memories.remember("bob", "user: my sister lives in Porto", "fact", importance=0.6)
    m.store.put(("memories", "alice"), "seat-pref", {"content": "Alice books aisle seats on planes", "importance": 0.7})
    m.store.put(("profiles", "alice"), "p", {"tz": "Europe/Paris"})
    m.end_session("alice", "t1")
    m.flush()
