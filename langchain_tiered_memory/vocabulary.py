"""The words memory is sorted by: memory types, entity types, and what models call them.

One home for these lists, so that the extractor, the offline rules, the store adapter, the
tools and the CLI accept exactly the same values.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "DISCLOSURES",
    "ENTITY_TYPES",
    "ENTITY_TYPE_ALIASES",
    "MEMORY_TYPES",
    "MEMORY_TYPE_ALIASES",
    "RELATION_ATTRIBUTE",
    "SELF",
    "USER_ENTITY",
    "Disclosure",
    "EntityType",
    "MemoryType",
    "entity_type",
    "memory_type",
]

#: A memory type, written once: tool schemas and models take the Literal, the rest the tuple.
MemoryType = Literal["fact", "preference", "experience", "instruction"]
#: The memory types, in the order error messages and help texts list them.
MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)

#: What a statement discloses of its speaker (text/disclosure.py): recall reads such a
#: memory as one a later message may lean on without sharing its words.
Disclosure = Literal["state", "goal", "value", "cause"]
DISCLOSURES: tuple[str, ...] = get_args(Disclosure)

#: An entity type, written once, the vague ones last.
EntityType = Literal["person", "organization", "place", "product", "topic", "other"]
#: The entity types, the vague ones last.
ENTITY_TYPES: tuple[str, ...] = get_args(EntityType)

#: The entity that stands for the user when a turn does not state their name.
USER_ENTITY = "user"
#: The attribute relating an entity to the user; the user's own entity has ``"self"``.
RELATION_ATTRIBUTE = "relation_to_user"
SELF = "self"

#: Attributes that hold a set, not one value: a later turn adds to them ("I dislike
#: mushrooms" after "I hate flying" keeps both), where a single-valued one (``location``,
#: ``employer``, ``diet``, ``favorite_*``) is replaced, the old value kept as history. Items
#: are stored joined by :data:`VALUE_SEPARATOR`.
MANY_VALUED_ATTRIBUTES = frozenset(
    "likes loves enjoys dislikes hates prefers allergies health languages hobbies interests skills pets "
    "sister sisters brother brothers sibling siblings friend friends cousin cousins child children kid kids "
    "son sons daughter daughters colleague colleagues coworker coworkers".split()
)
VALUE_SEPARATOR = ", "

#: What models write instead of an entity type, mapped to ours.
ENTITY_TYPE_ALIASES: dict[str, str] = {
    "people": "person", "human": "person", "individual": "person", "user": "person",
    "character": "person", "contact": "person", "persona": "person",
    "org": "organization", "organisation": "organization", "company": "organization",
    "business": "organization", "institution": "organization", "employer": "organization",
    "team": "organization", "school": "organization", "university": "organization",
    "location": "place", "city": "place", "country": "place", "region": "place",
    "town": "place", "state": "place", "address": "place", "venue": "place",
    "item": "product", "tool": "product", "software": "product", "app": "product",
    "device": "product", "brand": "product", "service": "product",
    "subject": "topic", "concept": "topic", "interest": "topic", "hobby": "topic",
    "skill": "topic", "language": "topic", "field": "topic",
}
#: What models write instead of a memory type, mapped to ours.
MEMORY_TYPE_ALIASES: dict[str, str] = {
    "facts": "fact", "information": "fact", "info": "fact", "knowledge": "fact",
    "preferences": "preference", "like": "preference", "likes": "preference",
    "dislike": "preference", "dislikes": "preference", "opinion": "preference",
    "taste": "preference", "interest": "preference",
    "experiences": "experience", "event": "experience", "episode": "experience",
    "history": "experience", "episodic": "experience",
    "instructions": "instruction", "rule": "instruction", "directive": "instruction",
    "command": "instruction", "request": "instruction", "behavior": "instruction",
    "behaviour": "instruction", "guideline": "instruction",
}


def memory_type(value: object) -> str | None:
    """``value`` as one of :data:`MEMORY_TYPES` (aliases and case folded), else ``None``."""
    if not isinstance(value, str):
        return None
    key = value.strip().casefold()
    if key in MEMORY_TYPES:
        return key
    return MEMORY_TYPE_ALIASES.get(key)


def entity_type(value: object) -> str | None:
    """``value`` as one of :data:`ENTITY_TYPES` (aliases and case folded), else ``None``."""
    if not isinstance(value, str):
        return None
    key = value.strip().casefold()
    if key in ENTITY_TYPES:
        return key
    return ENTITY_TYPE_ALIASES.get(key)
