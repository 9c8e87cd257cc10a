"""The offline rules: entities and memories from the user's own sentences, clause by clause."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from ..messages import speaker, spoken
from ..schema import TurnExtraction
from ...vocabulary import RELATION_ATTRIBUTE, SELF, USER_ENTITY
from .changes import changes
from .disclosures import disclosure
from .speakers import speaker_name
from .entities import name_kinds, proper_spans
from .patterns import (
    ADDRESSED,
    CLAUSE_SPLIT,
    DIETS,
    DISLIKE_VERBS,
    ELIDED_START,
    FIRST_PERSON_START,
    HAVE_SKIP,
    HEALTH,
    IM_ADVERBS,
    JOB_WORDS,
    LIKE_VERBS,
    MARITAL,
    NOT_A_JOB,
    NOT_A_PLACE,
    NOT_ACTIVITIES,
    NOW_START,
    NOT_PEOPLE,
    PERSON_DEED,
    PETS,
    QUESTION_START,
    R_ACTIVITY,
    R_AGE,
    R_AGE2,
    R_ALLERGY,
    R_CONSIDERING,
    R_DIET,
    R_DISLIKE,
    R_EXPERIENCE,
    R_FAVOURITE,
    R_FROM_NOW_ON,
    R_HABIT,
    R_HAVE,
    R_HAVE_REL,
    R_HEALTH,
    R_HOMETOWN,
    R_IM_A,
    R_INSTRUCTION,
    R_JOB_AS,
    R_LEARNING,
    R_LIKE,
    R_LOCATION,
    R_LOCATION2,
    R_LOCATION3,
    R_MARITAL,
    R_NAME,
    R_NAME_COMMA_MY,
    R_NAME_FROM,
    R_NAME_IS_MY,
    R_NO_LONGER,
    R_REL_NAMED,
    R_REMEMBER,
    R_REMEMBER_TO,
    R_SPEAK,
    R_WORK_AT,
    RELATION_OF_PLACE,
    WISHED_START,
    reports_event,
)
from .phrases import (
    PRONOUN_OBJECT,
    instruction_text,
    object_phrase,
    person_name,
    place_name,
    taste,
    third_person_object,
    with_article,
)
from .text import MAX_OFFLINE_CHARS, as_statement, split_sentences, to_third_person

__all__ = ["IMPORTANCE", "PARTNERS", "extract_rules"]

#: Relations of which one is current at a time.
PARTNERS = frozenset({"partner", "wife", "husband", "girlfriend", "boyfriend", "fiance", "fiancé", "fiancée", "spouse"})

#: Importance given by the rules, by kind of statement.
IMPORTANCE: dict[str, float] = {
    "instruction": 0.9,
    "remember": 0.9,
    "name": 0.8,
    "location": 0.8,
    "hometown": 0.8,
    "job": 0.8,
    "employer": 0.8,
    "age": 0.8,
    "health": 0.8,
    "relation": 0.7,
    "preference": 0.7,
    "marital": 0.7,
    "experience": 0.6,
    "habit": 0.6,
    "pastime": 0.6,
    "possession": 0.6,
    "self": 0.6,
    "disclosure": 0.6,
}


@dataclass
class _Found:
    """What the rules found in one turn, in order of appearance."""

    user_name: str | None = None
    user_attrs: dict[str, str] = field(default_factory=dict)
    entities: dict[str, tuple[str, str, dict[str, str]]] = field(default_factory=dict)
    memories: list[tuple[str, str, float, str | None, str | None, str | None]] = field(default_factory=list)

    def entity(self, name: str, type_: str, **attrs: str) -> None:
        key = name.casefold()
        if key in self.entities:
            old_name, old_type, old_attrs = self.entities[key]
            old_attrs.update(attrs)
            self.entities[key] = (old_name, old_type if old_type != "other" else type_, old_attrs)
        else:
            self.entities[key] = (name, type_, dict(attrs))

    def memory(
        self, content: str, memory_type: str, kind: str, subject: str | None = None, replaces: str | None = None,
        about: str | None = None,
    ) -> None:
        statement = as_statement(content)
        if statement:
            self.memories.append((statement, memory_type, IMPORTANCE[kind], subject, replaces, about))

    def add_attr(self, key: str, value: str, *, join: bool = False) -> None:
        old = self.user_attrs.get(key)
        if join and old and value.casefold() not in old.casefold():
            value = f"{old}, {value}"
        self.user_attrs[key] = value


class _Rules:
    """Applies the clause rules to the user's sentences."""

    def __init__(self, canon: dict[str, str]) -> None:
        self.found = _Found()
        self.canon = canon

    def name(self, raw: str) -> str:
        return self.canon.get(raw.casefold(), raw)

    def sentence(self, sentence: str) -> None:
        text = sentence.strip()
        if self._remember(text):
            return
        # "Zeno, my brother, just turned thirty": the commas that split clauses join these.
        m = R_NAME_COMMA_MY.match(text)
        if m:
            self.clause(f"{m.group('name')} is my {m.group('rel')}")
        # A clause opening with a verb ("… and work at Acme") has the subject of the one
        # before it: the user's after "I …", no one's after "Take care and have a good one".
        # Opening the sentence, it is the user's only in the past (see WISHED_START).
        user_subject: bool | None = None
        for clause in CLAUSE_SPLIT.split(text):
            clause = clause.strip(" ,;")
            if clause:
                elided = ELIDED_START.match(clause) is not None
                if elided:
                    user_subject = not WISHED_START.match(clause) if user_subject is None else user_subject
                else:
                    user_subject = FIRST_PERSON_START.match(clause) is not None
                self.clause(clause, elided_user=user_subject)

    def _remember(self, text: str) -> bool:
        m = R_REMEMBER_TO.match(text)
        if m and (what := object_phrase(m.group("what"), 30)):
            self.found.memory(f"The user wants to remember to {to_third_person(what)}", "fact", "remember")
            return True
        m = R_REMEMBER.match(text)
        if not m:
            return False
        what = m.group("what").strip().rstrip("?!. ")
        if not what:
            return False
        kind = "fact"
        if R_LIKE.search(what) or R_DISLIKE.search(what):
            kind = "preference"
        elif re.match(r"(?i:always|never)\b", what):
            kind = "instruction"
        content = to_third_person(what)
        if kind == "instruction":
            self.found.memory(content, "instruction", "instruction")
        else:
            self.found.memory(content, kind, "remember")
        # The remembered statement may also say who the user is, where they live…
        for clause in CLAUSE_SPLIT.split(what):
            if clause.strip():
                self.clause(clause.strip(" ,;"), memories=False)
        return True

    def no_longer(self, what: str, mem: Callable[..., None]) -> None:
        """"I no longer work at Acme": the rules read "I work at Acme" for the subjects it
        would set, and the change closes each of them (the memory supersedes the old one,
        the profile's attribute says it is past)."""
        probe = _Rules(self.canon)
        probe.clause("I " + what)
        said = to_third_person("I " + what)
        content = "The user no longer " + said[len("the user "):] if said.startswith("the user ") else None
        for _, memory_type, _, subject, *_ in probe.found.memories:
            if subject and content:
                mem(content, memory_type, "self", subject)
        for key, value in probe.found.user_attrs.items():
            if key != RELATION_ATTRIBUTE:
                self.found.add_attr(key, f"formerly {value}")

    def clause(self, clause: str, *, memories: bool = True, elided_user: bool = True) -> None:
        if elided_user and ELIDED_START.match(clause):
            clause = "I " + clause  # "… and work at Acme": the subject is elided
        clause = NOW_START.sub("", clause)  # "Now I live in Lisbon" says where, as of now
        clause = IM_ADVERBS.sub(r"\1 ", clause)
        if QUESTION_START.match(clause):
            return
        f = self.found
        mem = f.memory if memories else (lambda *a, **k: None)
        for rx in R_NO_LONGER:
            m = rx.search(clause)
            if m:
                self.no_longer(m.group("what"), mem)
                return

        m = R_INSTRUCTION.match(clause)
        what = re.sub(r"(?i)^(?:don't|do\s+not)\s+ever\b", "never", m.group("what")) if m else ""
        if m and ADDRESSED.match(what):
            mem(instruction_text(what), "instruction", "instruction")
            return
        m = R_FROM_NOW_ON.match(clause)
        if m and m.group("what").strip():
            mem(instruction_text(m.group("what")), "instruction", "instruction")
            return

        for rx in R_NAME:
            m = rx.search(clause)
            if m and (name := person_name(m.group("name"))):
                f.user_name = self.name(name)
                mem(f"The user's name is {f.user_name}", "fact", "name", "user name")
                break

        for rx, key in ((R_LOCATION, "location"), (R_LOCATION2, "location"), (R_LOCATION3, "location"),
                       (R_HOMETOWN, "hometown")):
            m = rx.search(clause)
            if m and (place := place_name(m.group("place"))) and not NOT_A_PLACE.match(place):
                place = self.name(place)
                f.add_attr(key, place)
                if place[0].isupper():
                    f.entity(place, "place")
                verb = "lives in" if key == "location" else "is from"
                mem(f"The user {verb} {place}", "fact", key, f"user {key}")

        job = org = None
        m = R_JOB_AS.search(clause)
        if m:
            job, org = object_phrase(m.group("role"), 5), m.group("org")
            if job and NOT_A_JOB.match(job):
                job = org = None  # "work as a team": how, not what
        else:
            m = R_IM_A.search(clause)
            if m:
                role = object_phrase(m.group("role"), 5)
                head = role.split()[-1].lower() if role else ""
                # "I'm a nurse", "I'm a barista at Blue Bottle"; not "I'm a sucker for superheroes".
                named_org = re.sub(r"(?i)^the\s+", "", m.group("org") or "")[:1].isupper()
                if role and (named_org or head in JOB_WORDS or head.rstrip("s") in JOB_WORDS):
                    job, org = role, m.group("org")
                elif (
                    role
                    and head not in DIETS | HEALTH | MARITAL
                    and not re.match(r"(?i)(?:bit|little|lot|fan|big\s+fan|huge\s+fan|sucker)\b", role)
                ):
                    mem(f"The user is {with_article(role)}", "fact", "self")
        if org is None:
            m = R_WORK_AT.search(clause)
            if m:
                org = m.group("org")
        org_name = place_name(org) if org else None
        if org_name and PRONOUN_OBJECT.match(org_name) or (org_name or "").lower() in ("myself", "home"):
            org_name = None
        if job:
            f.add_attr("job", job)
        if org_name:
            org_name = self.name(org_name)
            f.add_attr("employer", org_name)
            if org_name[0].isupper():
                f.entity(org_name, "organization")
        if job and org_name:
            mem(f"The user works as {with_article(job)} at {org_name}", "fact", "job", "user job")
        elif job:
            mem(f"The user works as {with_article(job)}", "fact", "job", "user job")
        elif org_name:
            # "their employer" is the word a question asks with ("who is my current employer?":
            # cosine 0.35 on average over six ways of asking, 0.22 without it).
            mem(f"The user works at {org_name}, their employer", "fact", "employer", "user employer")

        m = R_AGE.search(clause) or R_AGE2.search(clause)
        if m and 0 < int(m.group("age")) < 125:
            f.add_attr("age", m.group("age"))
            mem(f"The user is {m.group('age')} years old", "fact", "age", "user age")
        m = R_DIET.search(clause)
        if m:
            diet = m.group("diet").lower()
            f.add_attr("diet", diet)
            mem(f"The user is {diet}", "fact", "health")
        m = R_HEALTH.search(clause)
        if m:
            cond = " ".join(m.group("cond").lower().split())
            f.add_attr("health", cond, join=True)
            mem(f"The user is {cond}", "fact", "health")
        m = R_ALLERGY.search(clause)
        if m and (allergen := object_phrase(m.group("what"), 6)):
            f.add_attr("allergies", allergen, join=True)
            mem(f"The user is allergic to {allergen}", "fact", "health")
        m = R_MARITAL.search(clause)
        if m:
            status = m.group("status").lower()
            f.add_attr("marital_status", status)
            mem(f"The user is {status}", "fact", "marital", "user marital status")

        for rel, written in self._relations(clause):
            name = person_name(written)
            if not name or name.casefold() in NOT_PEOPLE:
                continue
            name = self.name(name)
            base = rel.split()[-1].split("-")[-1]
            f.entity(name, "other" if base in PETS else "person", **{RELATION_ATTRIBUTE: rel})
            f.add_attr(re.sub(r"[\s\-]+", "_", rel), name, join=True)
            # One partner at a time: a new one replaces the old (siblings, friends add up).
            subject = "user partner" if base in PARTNERS else None
            mem(f"The user's {rel} is {'named ' if base in PETS else ''}{name}", "fact", "relation", subject)

        m = R_DISLIKE.search(clause)
        if m and (obj := taste(m.group("obj"))):
            verb = " ".join(m.group("verb").lower().split())
            obj3 = third_person_object(obj)
            f.add_attr("dislikes", obj3, join=True)
            mem(f"The user {DISLIKE_VERBS.get(verb, verb)} {obj3}", "preference", "preference")
        else:
            m = R_LIKE.search(clause)
            if m and (obj := taste(m.group("obj"))):
                verb = " ".join(m.group("verb").lower().split())
                obj3 = third_person_object(obj)
                f.add_attr("prefers" if verb == "prefer" else "likes", obj3, join=True)
                mem(f"The user {LIKE_VERBS.get(verb, verb + 's')} {obj3}", "preference", "preference")
        m = R_FAVOURITE.search(clause)
        if m and (obj := object_phrase(m.group("obj"))):
            what = " ".join(m.group("what").lower().split())
            f.add_attr("favorite_" + re.sub(r"[\s\-]+", "_", what), obj)
            mem(f"The user's favourite {what} is {obj}", "preference", "preference", f"user favourite {what}")

        m = R_SPEAK.search(clause)
        if m and (obj := object_phrase(m.group("obj"))):
            f.add_attr("languages", obj, join=True)
            mem(f"The user speaks {obj}", "fact", "self")
        m = R_LEARNING.search(clause)
        if m and (obj := object_phrase(m.group("obj"))):
            verb = " ".join(m.group("verb").lower().split())
            mem(f"The user {'has been' if m.group('perfect') else 'is'} {verb} {third_person_object(obj)}", "fact", "self")
        m = R_EXPERIENCE.search(clause)
        before = clause[: m.start("verb")] if m else ""
        if m and (obj := object_phrase(m.group("obj"))) and reports_event(m.group("verb"), obj, before):
            verb = " ".join(m.group("verb").lower().split())
            perfect = re.search(r"(?i)(?:'ve|\bhave)\s", before)
            verb = f"has {verb}" if perfect or verb == "been to" else verb
            mem(f"The user {verb} {third_person_object(obj)}", "experience", "experience")
        m = R_ACTIVITY.search(clause)
        if m and m.group("verb").lower() not in NOT_ACTIVITIES and (obj := object_phrase(m.group("obj"))):
            mem(f"The user has been {m.group('verb').lower()} {third_person_object(obj)}", "fact", "self")
        m = R_CONSIDERING.search(clause)
        if m and (obj := object_phrase(m.group("obj"))):
            mem(f"The user is considering {third_person_object(obj)}", "fact", "self")
        changes(clause, mem)
        m = R_HABIT.search(clause)
        if m and (obj := object_phrase(m.group("obj"))):
            verb_phrase = third_person_object("I " + obj).removeprefix("the user ")
            mem(f"The user {m.group('adv').lower()} {verb_phrase}", "fact", "habit")
        m = R_HAVE.search(clause)
        if m and not HAVE_SKIP.match(m.group("obj")):
            if (obj := object_phrase(m.group("obj"))):
                mem(f"The user has {third_person_object(obj)}", "fact", "self")

    def _relations(self, clause: str) -> Iterator[tuple[str, str]]:
        """``(relation, name as written)`` of each person or pet the clause names by their
        relation to the user ("my sister Ana", "Beatriz from next door")."""
        for rx in (R_REL_NAMED, R_HAVE_REL, R_NAME_IS_MY):
            for m in rx.finditer(clause):
                yield " ".join(m.group("rel").lower().split()), m.group("name")
        for m in R_NAME_FROM.finditer(clause):
            # Opening a sentence, a capitalised word is no name by itself: "Noise from next
            # door kept me up" names no one; "Beatriz from next door brought us ..." does.
            opens = not clause[: m.start("name")].strip()
            said_from = " from " in m.group(0).casefold()
            known = m.group("name").casefold() in self.canon
            if opens and said_from and not known and not PERSON_DEED.match(clause[m.end():]):
                continue
            place = " ".join(m.group("rel").lower().split())
            yield RELATION_OF_PLACE.get(place, "neighbour"), m.group("name")


# --------------------------------------------------------------------------- extraction


def _human_texts(messages: Sequence[BaseMessage]) -> list[str]:
    # What the user said, a speaker written in front of it ("Caroline: …") taken off.
    return [spoken(m)[1][:MAX_OFFLINE_CHARS] for m in messages if speaker(m) == "user"]


def _other_texts(messages: Sequence[BaseMessage]) -> list[str]:
    # What the assistant (or the other person of a chat) said: read for context only.
    return [spoken(m)[1][:MAX_OFFLINE_CHARS] for m in messages if speaker(m) == "assistant"]


def extract_rules(
    messages: Sequence[BaseMessage], known_entities: Sequence[str] = (), known_types: Mapping[str, str] | None = None
) -> TurnExtraction:
    """The rule-based entities and memories of a turn (the user's messages only);
    ``known_types``: the stored type of each known name (see :func:`.entities.name_kinds`)."""
    known = {name.casefold(): kind for name, kind in (known_types or {}).items()}
    canon = {name.casefold(): name for name in [*known_entities, *(known_types or {})]}
    rules = _Rules(canon)
    sentences = [s for text in _human_texts(messages) for s in split_sentences(text)]
    found = rules.found
    for sentence in sentences:
        kept = len(found.memories)
        rules.sentence(sentence)
        # What the user says of their own state, goal, value or causes, kept whole as a
        # statement with its source turn: a later message may lean on it without its words.
        # A sentence a clause rule already kept ("remember that …", a dislike) is not kept twice.
        if len(found.memories) == kept and (statement := disclosure(sentence)) is not None:
            content, memory_type, about = statement
            found.memory(content, memory_type, "disclosure", about=about)

    entities: list[dict[str, object]] = []
    taken: set[str] = set()
    if found.user_name or found.user_attrs:
        # The name the turn states, else the one its messages carry, else the placeholder the
        # entity layer files under the name the user gave earlier (as the LLM's answers are).
        name = found.user_name or rules.name(speaker_name(messages) or USER_ENTITY)
        attrs = {**found.user_attrs, RELATION_ATTRIBUTE: SELF}
        entities.append({"name": name, "type": "person", "attributes": attrs})
        taken.add(name.casefold())
        taken.update(part.casefold() for part in name.split())
    for name, type_, attrs in found.entities.values():
        if name.casefold() not in taken:
            entities.append({"name": name, "type": type_, "attributes": attrs})
            taken.add(name.casefold())

    # Proper nouns: a capital that starts a sentence may be grammar, so such a word counts
    # only when it is known, found by a rule, several words long, or capitalised elsewhere.
    said = [(s, proper_spans(s)) for s in sentences]
    # What the other side of the turn says types the user's names and vouches for their
    # capitals ("stay in Tokyo" in the reply), and makes no entity of its own: the rules
    # read the user.
    heard = [(s, proper_spans(s)) for text in _other_texts(messages) for s in split_sentences(text)]
    spans = [(span, s) for s, found_spans in said for span in found_spans]
    mid_sentence = {span.text.casefold() for _, found_spans in said + heard for span in found_spans if not span.initial}
    trusted = taken | set(canon) | mid_sentence
    kinds = name_kinds(said + heard, known)
    for span, sentence in spans:
        key = span.text.casefold()
        if key in taken:
            continue
        if span.initial and span.words == 1 and key not in trusted:
            continue
        entities.append({"name": canon.get(key, span.text), "type": kinds[key], "attributes": {}})
        taken.add(key)

    memories = [
        {"content": content, "memory_type": memory_type, "importance": importance, "subject": subject,
         "replaces": replaces, "about": about}
        for content, memory_type, importance, subject, replaces, about in found.memories
    ]
    return TurnExtraction.model_validate({"entities": entities, "memories": memories, "method": "rules"})

