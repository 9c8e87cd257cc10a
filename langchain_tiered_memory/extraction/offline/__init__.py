"""Deterministic offline extraction: English rules for facts, extractive summaries.

Used when no chat model is configured, so that memory still works (and the demo shows real
behaviour) without a network or a key. Same input, same output: no randomness, no model.

Rules read only the user's (human) messages, clause by clause; questions and hypotheticals
("do I…", "if I…") are skipped. A clause with no subject is the user's after "I …" ("I live
in Oslo and work at Acme") or in the past ("Moved to Lisbon in May"); opening a sentence in
the present it wishes or praises ("Have a great day!", "Love the tattoo!") and says nothing
of the user. What they recognise, and the importance they give:

============================================  ===========================  ==========
pattern (examples)                            result                       importance
============================================  ===========================  ==========
"always/never …", "from now on …"             instruction                  0.9
  ("always/never": only how to answer or address the user, "never call me Jimmy";
  not "never give up")
"remember that …", "don't forget …"           memory (fact/preference)     0.9
"my name is X", "I'm X", "call me X"          user entity named X          0.8
  ("it's X": only after a greeting, "Hi, it's Sam"; not "It's Seattle!")
"I live in X", "I moved to X", "based in X"   user ``location``, place X   0.8
"I'm from X", "I grew up in X"                user ``hometown``, place X   0.8
"I work as a X", "I'm a X at Y", "work at Y"  user ``job`` / ``employer``  0.8
"I'm 34 (years old)"                          user ``age``                 0.8
"I'm vegan", "I'm allergic to X"              user ``diet`` / ``allergies``  0.8
"my/our wife/boss/friend … (is/named) X"      person X, ``relation_to_user``  0.7
"X from next door", "X from work"             person X, neighbour / coworker  0.7
  (opening a sentence: only if X then does something, "… brought us a lasagne")
"I like/love/enjoy/prefer X", "my favourite"  preference, user ``likes``   0.7
"I hate/dislike/can't stand/don't like X"     preference, user ``dislikes``  0.7
"I'm married/single …"                        user ``marital_status``      0.7
"I visited/went to/bought/met X"              experience                   0.6
"I had surgery…", "I painted a sunset…"       experience (an object of its own)  0.6
"I always/usually/never X" (a habit)          fact                         0.6
"I speak X", "I'm learning X", "I have X"     fact                         0.6
"I've been blogging about X" (an activity)    fact: "has been blogging …"  0.6
"I'm considering/thinking about doing X"      fact: "is considering …"     0.6
"joined a X club", "took up X"                fact: "the user's hobby is X"  0.6
"signed up for a X class/course"              fact: "the user is learning X"  0.6
"my new X", "got a X to replace my Y"         fact: "has a new X", "new Y"   0.6
capitalised proper nouns                      entity (no memory)           —
============================================  ===========================  ==========

The user's own entity is named by the name stated in the turn ("I'm Alice"), else by the
one the user's messages carry (a named speaker, ``HumanMessage(..., name="Caroline")`` or
"Caroline: …", which the LLM prompt shows as "user [Caroline]"; a handle or a role,
"alice_w", "user", names no one, nor do two speakers in one turn: :mod:`.speakers`), else
:data:`USER_ENTITY` (``"user"``), the placeholder the entity layer files under the name the
user gave earlier; it carries ``relation_to_user: self``, as the LLM prompt asks too, so the
entity layer can tell it apart. The word "user" in a text, a pronoun or a sentence's
grammar never makes an entity. Proper nouns are capitalised words
that do not start a sentence (unless already known, found by a rule, or several words
long), minus pronouns, greetings, days and months and the grammar opening a sentence
("Bye Joanna" → Joanna); their type comes from their context ("in X", "get to X" → place,
"work at X" → organization, "Inc"/"University" → organization, CamelCase or digits →
product, nationalities and languages → topic, else other), read in the assistant's replies
too (they type the user's names and add none), and names listed by a word beside a place
are places ("Tokyo and Kyoto, maybe Osaka"). Given the types already stored
(``known_types``, ``{"Kyoto": "place"}``), a known name the turn says nothing telling of keeps
its type, and a name listed by a word with a known place is one ("Kyoto and Uji" the turn
after "I'm flying to Kyoto"); only places spread so, a list of people or companies being as
often mixed. A turn alone that names no known place and gives no context ("We'll also see Uji
and Osaka") types nothing: "see X" is said of people, bands and shows as often as of places.

Modules, one job each: :mod:`.text` (sentences, pronouns), :mod:`.entities` (proper nouns),
:mod:`.speakers` (the name a user's messages carry),
:mod:`.patterns` and :mod:`.rules` (the table above; :mod:`.changes` its rows of what is new:
a pastime taken up, a switch, a new possession; :mod:`.phrases` cuts what a pattern captured
down to a value), :mod:`.summary` (extractive summaries
and episodes), :mod:`.extractor` (:class:`OfflineExtractor`, and :class:`ExtractiveSummaries`, the
fallback :func:`~langchain_tiered_memory.extraction.make_extractor` hands the LLM extractor).
Nothing here imports the LLM extractor: only :mod:`~langchain_tiered_memory.extraction.schema` and its message helpers.
"""

from __future__ import annotations

from .entities import proper_spans
from .extractor import ExtractiveSummaries, OfflineExtractor
from .rules import IMPORTANCE, extract_rules
from .summary import EPISODE_SUMMARY_TOKENS, compress_extractive, extractive_episode, extractive_summary
from .text import split_sentences, third_person_verb, to_third_person

__all__ = [
    "EPISODE_SUMMARY_TOKENS",
    "IMPORTANCE",
    "ExtractiveSummaries",
    "OfflineExtractor",
    "compress_extractive",
    "extract_rules",
    "extractive_episode",
    "extractive_summary",
    "proper_spans",
    "split_sentences",
    "third_person_verb",
    "to_third_person",
]
