"""LongChat: seeded long multi-session conversations with questions about what was said.

    from longchat import generate, dump, load
    conversations = generate(seed=0, personas=8, sessions=12, turns_per_session=24)
"""

from .generator import (
    KINDS,
    Conversation,
    Question,
    Session,
    Turn,
    contains,
    contains_any,
    date_forms,
    dump,
    dumps,
    find,
    generate,
    load,
    loads,
)

__all__ = [
    "KINDS", "Conversation", "Question", "Session", "Turn", "contains", "contains_any",
    "date_forms", "dump", "dumps", "find", "generate", "load", "loads",
]
