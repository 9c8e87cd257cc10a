"""The clause patterns of the offline rules: what a user says about themself.

Each ``R_*`` pattern recognises one kind of statement in a clause of the user's message
(see :mod:`langchain_tiered_memory.offline` for the table); :mod:`.phrases` cuts the phrase
a pattern captured down to a value ("Paris, which I love" → "Paris").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .phrases import CAP as _CAP

# What may join a clause to the one before it.
_JOINED = r"(?:(?:and|but|also|so|then|plus)\s+)?"
_OPENER = (
    rf"{_JOINED}(?:i|i'm|i've|i'd|i'll|im|my|we|we're|our|you|your|"
    r"please|remember|always|never|don't|do not|call|from now on)\b"
)
_ELIDED = (
    r"(?:live|lived|work|moved|prefer|like|love|hate|enjoy|dislike|speak|grew|have|am|joined|"
    r"signed\s+up|enrolled|took\s+up)\b"
)
CLAUSE_SPLIT = re.compile(
    rf"\s*(?:[;:]|,|\s-\s)\s*(?={_OPENER})|\s+(?:and|but|so|because|while|although|though|whereas|or)\s+(?={_OPENER}|{_ELIDED})",
    re.I,
)
ELIDED_START = re.compile(rf"^{_ELIDED}", re.I)
# A clause whose subject is the user, so that a verb after its "and" is the user's too.
FIRST_PERSON_START = re.compile(rf"^{_JOINED}(?:i|i'm|i've|i'd|i'll|im|we|we're|we've)\b", re.I)
# Opening a sentence, a verb in the present with no subject wishes, bids or compliments
# ("Have a great day!", "Enjoy your trip!", "Love the tattoo, did you just get it?") as
# often as it drops the "I" of a statement: only a past one ("Moved to Lisbon in May"),
# or a pastime said of no one else ("Love experimenting with spices", not "Love seeing
# your dedication"), is read as the user's.
WISHED_START = re.compile(
    r"^(?:have|love|like|enjoy|hate|dislike|prefer|work|speak|am)\b"
    r"(?!\s+\w+ing\b(?!.*\b(?:you|your|yours|it|that|this|them)\b))",
    re.I,
)
QUESTION_START = re.compile(
    r"^(?:(?:so|and|but|hey|ok|okay|well|also)[,\s]+)?(?:do|does|did|can|could|would|will|should|"
    r"is|are|am|was|were|what|where|who|when|why|how|which|whose|shall|have|has|if|unless|"
    r"suppose|imagine|what if|in case)\b",
    re.I,
)

_NAME = rf"{_CAP}(?:\s+{_CAP})?"
JOB_WORDS = {
    "engineer", "developer", "programmer", "designer", "teacher", "doctor", "nurse", "lawyer",
    "attorney", "student", "scientist", "researcher", "manager", "writer", "author", "artist",
    "chef", "cook", "accountant", "consultant", "analyst", "architect", "professor", "lecturer",
    "journalist", "photographer", "musician", "pilot", "dentist", "pharmacist", "therapist",
    "psychologist", "mechanic", "electrician", "plumber", "carpenter", "farmer",
    "entrepreneur", "founder", "co-founder", "ceo", "cto", "cfo", "director", "officer",
    "intern", "librarian", "editor", "translator", "baker", "waiter", "waitress", "barista",
    "firefighter", "physician", "surgeon", "veterinarian", "vet", "economist", "banker",
    "trader", "salesperson", "marketer", "recruiter", "administrator", "admin", "technician",
    "assistant", "secretary", "clerk", "cashier", "driver", "tutor", "coach", "trainer",
    "paramedic", "soldier", "police", "detective", "actor", "actress", "singer", "dancer",
    "producer", "freelancer", "contractor", "lead", "specialist", "coordinator",
    "executive", "owner", "partner", "sre", "devops", "phd", "postdoc", "retiree",
    "mathematician", "physicist", "chemist", "biologist", "statistician",
}
DIETS = {"vegan", "vegetarian", "pescatarian", "keto", "gluten-free", "kosher", "halal"}
HEALTH = {"diabetic", "celiac", "coeliac", "lactose intolerant", "gluten intolerant",
           "pregnant", "colorblind", "colourblind", "deaf", "blind", "asthmatic", "epileptic"}
MARITAL = {"married", "single", "divorced", "engaged", "widowed", "separated"}
_RELATIONS = (
    "wife", "husband", "partner", "spouse", "girlfriend", "boyfriend", "fiancee", "fiance",
    "sister", "brother", "sibling", "mother", "mom", "mum", "father", "dad", "son",
    "daughter", "child", "kid", "baby", "friend", "boss", "manager", "colleague",
    "coworker", "co-worker", "cousin", "aunt", "uncle", "niece", "nephew", "grandmother",
    "grandfather", "grandma", "grandpa", "neighbour", "neighbor", "roommate", "flatmate",
    "teacher", "doctor", "therapist", "mentor", "dog", "cat", "pet", "puppy", "kitten",
    "horse", "parrot", "rabbit", "hamster",
    # Family by marriage, by choice and by a second marriage; more people a life has in it.
    "mother-in-law", "father-in-law", "sister-in-law", "brother-in-law", "son-in-law",
    "daughter-in-law", "godmother", "godfather", "godson", "goddaughter", "stepmother",
    "stepfather", "stepbrother", "stepsister", "stepson", "stepdaughter", "stepmum", "stepdad",
    "grandson", "granddaughter", "grandchild", "granddad", "grandad", "granny", "nan",
    "housemate", "classmate", "landlord", "landlady", "dentist", "coach", "tutor",
    "fiancée", "wife-to-be", "husband-to-be",
)
PETS = {"dog", "cat", "pet", "puppy", "kitten", "horse", "parrot", "rabbit", "hamster"}
#: The relations that are people (a relation rule reads "my new boss Tom", not a thing had).
PEOPLE = frozenset(_RELATIONS) - PETS
_REL = (
    r"(?P<rel>(?:(?:older|younger|little|big|baby|best|new|old|ex|elder|twin|step|eldest|youngest)[\s-]+)?"
    r"(?:" + "|".join(sorted(_RELATIONS, key=len, reverse=True)) + r"))"
)
LIKE_VERBS = {
    "like": "likes", "love": "loves", "enjoy": "enjoys", "prefer": "prefers", "adore": "adores",
    "am fond of": "is fond of", "'m fond of": "is fond of", "am a fan of": "is a fan of",
    "'m a fan of": "is a fan of", "am into": "is into", "'m into": "is into",
    "am passionate about": "is passionate about", "'m passionate about": "is passionate about",
    "am a big fan of": "is a big fan of", "'m a big fan of": "is a big fan of",
    "am a huge fan of": "is a huge fan of", "'m a huge fan of": "is a huge fan of",
}
DISLIKE_VERBS = {
    "hate": "hates", "dislike": "dislikes", "detest": "detests", "despise": "despises",
    "can't stand": "can't stand", "cannot stand": "cannot stand", "can't bear": "can't bear",
    "don't like": "doesn't like", "do not like": "does not like", "don't enjoy": "doesn't enjoy",
    "do not enjoy": "does not enjoy", "don't care for": "doesn't care for",
    "am not a fan of": "is not a fan of", "'m not a fan of": "is not a fan of",
    "am not into": "is not into", "'m not into": "is not into",
}
_INTENS = r"(?:(?:really|absolutely|truly|also|just|totally|kind of|kinda|do|actually|especially|mostly|generally|definitely|honestly|still)\s+)*"


def _alternation(words: Sequence[str]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


IM_ADVERBS = re.compile(
    r"(?i)\b(i'm|i\s+am|im)\s+(?:(?:really|absolutely|totally|so|very|kind\s+of|kinda|super|quite|"
    r"pretty|actually|also|just|definitely|honestly|still|now)\s+)+"
)
_I = r"(?i:\bi)"
_IM = r"(?i:\b(?:i'm|i\s+am|im))"
# "I'm 34 and married": an adjective rule may follow another adjective.
_IM_AND = rf"{_IM}\s+(?:[\w\-' ]{{1,40}}?\s+and\s+)?"

R_NAME = [
    _rx(rf"(?i:\bmy\s+name(?:'s|\s+is))\s+(?P<name>[A-Za-z][A-Za-z'\-]*(?:\s+{_CAP})?)"),
    _rx(rf"(?i:\b(?:call\s+me|people\s+call\s+me|everyone\s+calls\s+me|i\s+go\s+by|i'm\s+called|i\s+am\s+called))\s+(?P<name>[A-Za-z][A-Za-z'\-]*(?:\s+{_CAP})?)"),
    _rx(rf"^(?i:(?:(?:hi|hello|hey)[\s,!]+)?(?:there[\s,!]+)?(?:i'm|i\s+am|im))\s+(?P<name>{_NAME})(?=\s*(?:[,.!;]|$|\s+(?i:and|from|here|by|at)\b))"),
    # "It's Seattle!", "It's Shia Labeouf!" answer a question: after a greeting, "it's" names.
    _rx(rf"^(?i:(?:hi|hello|hey)[\s,!]+(?:there[\s,!]+)?(?:it's|this\s+is))\s+(?P<name>{_NAME})(?=\s*(?:[,.!;]|$|\s+(?i:and|from|here|by|at)\b))"),
]
# "We moved to Lisbon": a household's home is the user's.
_I_OR_WE = r"(?i:\b(?:i|we))"
# "We moved from Paris to Lisbon": the place left is skipped, the new one is home.
R_LOCATION = _rx(
    rf"{_I_OR_WE}(?i:(?:'ve|\s+have)?(?:\s+(?:just|recently|now|currently|finally))?\s+(?:live|am\s+living|'m\s+living|reside|stay|moved|relocated|am\s+moving|'m\s+moving|am\s+based|'m\s+based|am\s+located|'m\s+located|am\s+staying|'m\s+staying))(?:\s+(?i:away\s+)?(?i:from)\s+[^,;]+?)?\s+(?i:in|to)\s+(?P<place>.+)"
)
# "I no longer work at Acme", "I don't live in Paris anymore", "I stopped drinking coffee":
# what the user did until now (``what``, said as "I …"), so that the rule which reads it
# names the subject the change closes.
R_NO_LONGER = [
    _rx(rf"{_I_OR_WE}(?i:\s+no\s+longer\s+)(?P<what>.+?)[.!]*$"),
    _rx(rf"{_I_OR_WE}(?i:\s+(?:don't|do\s+not)\s+)(?P<what>.+?)(?i:\s+(?:any\s*more|any\s+longer))[.!]*$"),
]
# "I switched from coffee to green tea", "we've switched to a standing desk".
R_SWITCHED = _rx(
    rf"{_I_OR_WE}(?i:(?:'ve|\s+have)?(?:\s+(?:just|recently|finally|now))?\s+(?:switched|changed|moved\s+over|gone\s+over)(?:\s+from\s+(?P<old>[^,;]+?))?\s+to\s+)(?P<new>[^,;.!?]+)"
)
# "Now I live in Lisbon", "These days I work at Acme": a clause that says it is the present.
NOW_START = re.compile(r"(?i)^(?:and\s+)?(?:now|nowadays|these\s+days|currently|at\s+the\s+moment)\s*,?\s+(?=(?:i|we)\b)")
# "We're finally unpacked in Lisbon": settling in says where home is now.
R_LOCATION3 = _rx(
    rf"{_I_OR_WE}(?i:(?:'re|'m|\s+are|\s+am)(?:\s+(?:finally|now|all|just))*\s+(?:settled|unpacked|moved\s+in)\s+in)\s+(?P<place>.+)"
)
# "We work as a team": how one works, not a job.
NOT_A_JOB = re.compile(r"(?i)(?:team|unit|group|family|whole|pair|one)\b")
# "I stay in shape", "we keep in touch": where no one lives.
NOT_A_PLACE = re.compile(
    r"(?i)(?:shape|touch|contact|bed|line|tune|character|control|charge|the\s+loop|the\s+moment|"
    r"the\s+zone|my\s+lane|a\s+rut)\b"
)
R_LOCATION2 = _rx(rf"(?i:\b(?:my\s+home\s+is|my\s+city\s+is|i\s+call)\s+(?:in\s+)?)(?P<place>.+)")
R_HOMETOWN = _rx(
    rf"(?:{_IM}(?:\s+{_NAME})?(?i:\s+(?:originally\s+)?from)|{_I}(?i:\s+(?:grew\s+up|was\s+born|was\s+raised)\s+in)|(?i:\bi\s+come\s+from))\s+(?P<place>.+)"
)
R_JOB_AS = _rx(
    rf"(?:{_I}(?i:\s+(?:currently\s+)?work(?:ing)?\s+as)|{_IM}(?i:\s+working\s+as)|(?i:\bmy\s+(?:job|role|position|title|profession|occupation)\s+is))\s+(?i:(?:a|an|the)\s+)?(?P<role>[A-Za-z][\w\-]*(?:\s+(?!(?i:at|for|with|in|and|but|from|who|which|since|on)\b)[A-Za-z][\w\-]*){{0,3}})(?:\s+(?i:at|for|with)\s+(?P<org>.+))?"
)
R_IM_A = _rx(
    rf"{_IM}\s+(?i:(?:a|an)\s+)(?P<role>[A-Za-z][\w\-]*(?:\s+(?!(?i:at|for|with|in|and|but|from|who|which|since|on|of|to)\b)[A-Za-z][\w\-]*){{0,3}})(?:\s+(?i:at|for|with)\s+(?P<org>.+))?"
)
R_WORK_AT = _rx(
    rf"(?:{_I}(?i:\s+(?:currently\s+|now\s+)?work(?:ing)?\s+(?:at|for))|{_IM}(?i:\s+(?:working|employed)\s+(?:at|for|by))|(?i:\bmy\s+(?:employer|company)\s+is)"
    # A new job says who the employer is now: "I accepted an offer from X", "I started at X".
    rf"|{_I}(?i:(?:'ve|\s+have)?(?:\s+(?:just|finally|officially))?\s+(?:accepted\s+(?:an?\s+|the\s+)?(?:job\s+)?offer\s+from|started\s+(?:a\s+new\s+job\s+|work(?:ing)?\s+)?at))(?=\s+[A-Z])"
    rf"|{_IM}(?i:\s+(?:starting|joining)\s+(?:a\s+new\s+job\s+)?at)(?=\s+[A-Z])|(?i:\bmy\s+new\s+(?:job|employer|company)\s+is(?:\s+at)?))\s+(?P<org>.+)"
)
R_AGE = _rx(rf"{_IM}\s+(?P<age>\d{{1,3}})(?:\s*(?i:years?\s+old|yo|y/o|year-old))?\s*[.!]?$")
R_AGE2 = _rx(rf"{_IM}\s+(?P<age>\d{{1,3}})\s*(?i:years?\s+old|yo|y/o)")
R_DIET = _rx(rf"{_IM_AND}(?i:(?:a\s+)?(?:strict\s+)?)(?P<diet>(?i:{_alternation(sorted(DIETS))}))\b")
R_HEALTH = _rx(rf"{_IM_AND}(?P<cond>(?i:{_alternation(sorted(HEALTH))}))\b")
R_ALLERGY = _rx(rf"(?:{_IM_AND}(?i:(?:very\s+|severely\s+|deathly\s+)?allergic\s+to)|(?i:\bi\s+have\s+an?\s+(?:\w+\s+)?allergy\s+to))\s+(?P<what>.+)")
R_MARITAL = _rx(rf"{_IM_AND}(?P<status>(?i:{_alternation(sorted(MARITAL))}))\b")
R_REL_NAMED = _rx(
    rf"(?i:\b(?:my|our)\s+){_REL}(?:(?i:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|,?\s+(?:who\s+is\s+)?(?:called|named)|\s+is)\s+|,?\s+)(?P<name>{_NAME})\b"
)
# "Beatriz from next door", "Tom from work": a person named by where the user knows them from.
R_NAME_FROM = _rx(
    rf"(?<![\w'])(?P<name>{_NAME}),?\s+(?i:(?:from|who\s+lives|that\s+lives|living)\s+)"
    r"(?P<rel>(?i:next\s+door|across\s+the\s+(?:hall|landing|street)|work))\b"
)
#: After "X from next door" at the start of a sentence, what a person does ("Beatriz from next
#: door *brought* us a lasagne"), unlike noise, calls or builders ("Noise from next door kept
#: me up"): a capitalised first word is not a name by itself.
PERSON_DEED = re.compile(
    r"(?i)^\s*(?:(?:just|finally|always|also|kindly|once|sometimes)\s+)?(?:brought|brings|lent|lends|gave|gives|"
    r"sent|sends|said|says|told|tells|asked|asks|invited|invites|helped|helps|texted|messaged|rang|called\s+me|"
    r"came\s+over|comes\s+over|dropped\s+by|drops\s+by|popped\s+(?:over|round|by)|cooked|cooks|baked|bakes|"
    r"fed|feeds|watered|waters|mentioned|recommended|recommends|offered|offers|borrowed|borrows|knocked|waved|"
    r"introduced|keeps\s+an\s+eye|kept\s+an\s+eye|looks\s+after|looked\s+after|takes\s+care|took\s+care|"
    r"visited|visits|joined|hosted|hosts|threw|throws|organised|organized|married|adopted)\b"
)
#: The relation each place of :data:`R_NAME_FROM` says.
RELATION_OF_PLACE = {"work": "coworker"}  # the rest: next door, across the hall... a neighbour
R_HAVE_REL = _rx(
    rf"{_I}(?i:\s+(?:have|'ve\s+got|have\s+got)\b.*?\b(?:a|an|one|two|three|\d+)\s+){_REL}(?i:s?\s+(?:named|called))\s+(?P<name>{_NAME})\b"
)
R_NAME_IS_MY = _rx(rf"^(?P<name>{_NAME})\s+(?i:is\s+my\s+){_REL}\b")
# "Zeno, my brother, just turned thirty": the appositive names the relation too.
R_NAME_COMMA_MY = _rx(rf"^(?P<name>{_NAME}),\s+(?i:my\s+){_REL}\b")
R_LIKE = _rx(rf"{_I}(?:\s+|(?='))(?i:{_INTENS})(?P<verb>(?i:{_alternation(list(LIKE_VERBS))}))\s+(?P<obj>.+)")
R_DISLIKE = _rx(rf"{_I}(?:\s+|(?='))(?i:{_INTENS})(?P<verb>(?i:{_alternation(list(DISLIKE_VERBS))}))\s+(?P<obj>.+)")
R_FAVOURITE = _rx(r"(?i:\bmy\s+(?:absolute\s+)?favou?rite\s+)(?P<what>[a-z][\w\-]*(?:\s+[a-z][\w\-]*)?)(?i:\s+is|\s+are|'s)\s+(?P<obj>.+)")
R_SPEAK = _rx(rf"{_I}(?i:\s+(?:also\s+)?speak)\s+(?P<obj>.+)")
# "I'm learning Spanish", "I've been learning the sitar since January".
R_LEARNING = _rx(
    rf"(?:{_IM}|(?P<perfect>{_I}(?i:(?:'ve|\s+have)\s+been)))\s+(?P<verb>(?i:learning|studying|practi[sc]ing|"
    r"training\s+for|saving\s+for|preparing\s+for|planning\s+to|working\s+on))\s+(?P<obj>.+)"
)
R_EXPERIENCE = _rx(
    rf"{_I}(?i:(?:'ve|\s+have)?(?:\s+(?:just|recently|once|finally|already|actually))?\s+)(?P<verb>(?i:visited|went\s+to|travel(?:l)?ed\s+to|got\s+back\s+from|returned\s+from|been\s+to|attended|graduated\s+from|finished|completed|started|bought|adopted|met|ran|climbed|won|lost|got\s+married|broke\s+up|moved\s+out|quit|retired|had(?!\s+(?:to|been|no|nothing)\b|\s+(?:(?:a|an|such\s+a|so\s+much)\s+)?(?:[\w-]+\s+)?(?:time|fun|blast|day|night|chat|talk|feeling|idea)\b)|got(?!\s+(?:to|back|into|it|that|this|used)\b)|made|took(?!\s+up\b)|saw|watched|wrote|built|baked|cooked|painted|planted|hosted|organi[sz]ed|volunteered|performed|played|celebrated|received|tried))\s+(?P<obj>.+)"
)
#: What someone is doing these days, said as "I've been …ing …" ("I've been blogging about
#: politics", "I've been volunteering at the shelter"); not the verbs of a passing state or
#: of talk ("I've been thinking about it", "I've been looking forward to this"), nor those
#: R_LEARNING reads.
NOT_ACTIVITIES = frozenset({
    "thinking", "wondering", "meaning", "trying", "hoping", "wanting", "waiting", "looking",
    "going", "getting", "doing", "having", "saying", "telling", "asking", "feeling", "being",
    "dying", "loving", "enjoying", "missing", "learning", "studying", "practicing", "practising",
    "training", "saving", "preparing", "planning", "working", "keeping", "seeing",
})
# "I've been blogging about politics", "I have been volunteering at the shelter".
R_ACTIVITY = _rx(
    rf"{_I}(?i:(?:'ve|\s+have)\s+(?:(?:really|also|just|recently|lately)\s+)?been\s+(?:(?:really|busy)\s+)?)"
    r"(?P<verb>[a-z]{3,}ing)\s+(?P<obj>.+)"
)
# "I'm considering adopting a rescue dog", "I'm thinking about going into policymaking".
R_CONSIDERING = _rx(
    rf"{_IM}(?i:\s+(?:(?:really|seriously|also|now)\s+)?(?P<verb>considering|thinking\s+(?:about|of)))\s+"
    r"(?P<obj>[a-z]+ing\b.+)"
)
#: Common verbs of a reported event ("I had surgery", "I painted a sunset"). They also open
#: other clauses ("the advice I got was…", "I saw your photo"), so their object must be a
#: phrase of its own: two words at least, not opening with a verb or a word for the listener.
EVENT_VERBS = frozenset({
    "had", "got", "made", "took", "saw", "watched", "wrote", "built", "baked", "cooked", "painted",
    "planted", "hosted", "organized", "organised", "volunteered", "performed", "played", "celebrated",
    "received", "tried",
})
#: (``object_phrase`` has already turned away an object opening with "it", "that", "you"…:
#: ``PRONOUN_OBJECT``.)
NOT_EVENT_OBJECT = frozenset({
    "was", "is", "were", "are", "has", "have", "had", "makes", "made", "be", "been", "your",
    "yours", "so", "such", "me", "us",
})


def reports_event(verb: str, obj: str, before: str) -> bool:
    """Whether an event verb's match reports an event (see ``EVENT_VERBS``): its object a
    phrase of its own, and not "I've got …" (that says what one has)."""
    verb = verb.lower()
    if verb not in EVENT_VERBS:
        return True
    words = obj.split()
    if len(words) < 2 or words[0].lower() in NOT_EVENT_OBJECT:
        return False
    return not (verb == "got" and re.search(r"(?i)(?:'ve|\bhave)\s+$", before))


#: What people join for a pastime ("the chess club"), and to learn something ("a pottery class").
PASTIME_GROUPS = ("club", "group", "team", "league", "society", "meetup", "choir", "band", "crew")
LEARNING_GROUPS = ("class", "classes", "course", "courses", "lessons", "workshop", "workshops")
# "I joined a climbing club", "signed up for pottery classes": a pastime, and a group.
R_JOINED = _rx(
    rf"{_I_OR_WE}(?i:(?:'ve|\s+have)?(?:\s+(?:just|recently|finally|also|officially))?\s+"
    rf"(?:joined|signed\s+up\s+(?:for|to|with)|enrolled\s+in|started\s+going\s+to|started\s+taking))\s+"
    rf"(?i:(?:a|an|the|my|our|some)\s+)?(?i:(?:local|new|weekly|evening|beginners'?|beginner)\s+)*"
    rf"(?P<what>[\w'\-]+(?:\s+[\w'\-]+){{0,2}}?)\s+(?P<group>(?i:{_alternation(PASTIME_GROUPS + LEARNING_GROUPS)}))\b"
)
# "I took up archery", "we got into bouldering": a pastime begun.
R_TOOK_UP = _rx(
    rf"{_I_OR_WE}(?i:(?:'ve|\s+have)?(?:\s+(?:just|recently|finally|also|really))?\s+"
    # "got into" alone is as often a university or trouble: only "really into", or an activity.
    rf"(?:took\s+up|taken\s+up|got\s+really\s+into|gotten\s+really\s+into|got\s+into(?=\s+\w+ing\b)|"
    rf"gotten\s+into(?=\s+\w+ing\b)))\s+(?P<obj>.+)"
)
# "my new Pixel 8", "our new place in Vancouver": something the user has now.
R_MY_NEW = _rx(r"(?i:\b(?:my|our)\s+(?:brand[\s-]+)?new\s+)(?P<obj>.+)")
# "got a Galaxy S23 to replace my broken phone": what the new thing is, and what it is.
R_REPLACES = _rx(
    rf"{_I_OR_WE}?(?i:(?:'ve|\s+have)?\s*(?:just\s+)?(?:got|bought|ordered|picked\s+up|found)\s+(?:a|an|the|my)\s+)"
    r"(?P<new>.+?)(?i:\s+to\s+replace\s+(?:my|our|the)\s+(?:old\s+|broken\s+|dead\s+|lost\s+|stolen\s+)*)(?P<old>[\w\-]+(?:\s+[\w\-]+)?)"
)
R_HABIT = _rx(rf"{_I}\s+(?P<adv>(?i:always|usually|never|often|rarely|normally|generally|typically))\s+(?P<obj>.+)")
R_HAVE = _rx(rf"{_I}(?i:\s+(?:have|'ve\s+got|have\s+got))\s+(?P<obj>(?i:a|an|two|three|four|five|\d+)\s+.+)")
HAVE_SKIP = re.compile(
    r"^(?:an?|\w+)\s+(?:\w+\s+)?(?:question|problem|issue|idea|doubt|suggestion|minute|moment|"
    r"feeling|request|favou?r|bit|little|lot|few|couple|look|go|try|chance|time|blast|fun)\b",
    re.I,
)
R_REMEMBER = _rx(
    r"(?i:^(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?(?:remember|don't\s+forget|do\s+not\s+forget|never\s+forget|keep\s+in\s+mind|make\s+a\s+note|note|take\s+note)(?:\s+that|\s*:|\s*,)|^for\s+future\s+reference[\s,:]+)\s*(?P<what>.+)"
)
R_REMEMBER_TO = _rx(r"(?i:^(?:please\s+)?(?:remember|don't\s+forget)\s+to)\s+(?P<what>.+)")
R_INSTRUCTION = _rx(
    r"(?i:^(?:(?:and|also|so|ok|okay)[\s,]+)?(?:please[\s,]+)?(?:(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|for\s+the\s+rest\s+of\s+(?:this|our)\s+conversation)[\s,]+)?(?:please[\s,]+)?(?:you\s+(?:should|must|need\s+to|have\s+to)\s+|make\s+sure\s+(?:to|you)\s+)?(?:please\s+)?)(?P<what>(?i:always|never|don't\s+ever|do\s+not\s+ever)\b.+)"
)
#: What "always …"/"never …" asks of an assistant: a verb of how it answers or addresses the
#: user. In a chat between people "never give up", "always there for me" or "never been on
#: a team" are encouragement or news, not standing instructions: on LoCoMo's chats such
#: lines were 75 of the rules' 76 instructions, each kept at importance 0.9.
_ASSISTANT_VERBS = (
    "answer|reply|respond|use|call|cite|write|include|ask|tell|remind|mention|suggest|recommend|"
    "format|show|explain|address|refer|list|add|confirm|summari[sz]e|translate|sign|greet|offer|"
    "provide|bring\\s+up|assume|quote|spell|round|end|start|begin|send|avoid|recap|number|label|"
    "link|convert|interrupt|correct|keep\\s+(?:it|answers?|replies|responses|things)\\b|give\\s+(?:me|us)\\b|"
    "let\\s+(?:me|us)\\s+know|"
    "be\\s+(?:concise|brief|short|honest|direct|polite|formal|informal|clear|specific|detailed|blunt)"
)
ADDRESSED = re.compile(rf"(?i)^(?:always|never)\s+(?:{_ASSISTANT_VERBS})\b")
R_FROM_NOW_ON = _rx(
    r"(?i:^(?:please[\s,]+)?(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future)[\s,]+(?:please[\s,]+)?)(?P<what>.+)"
)


#: Words that stand where a name would and name no one ("someone from work").
NOT_PEOPLE = frozenset({"someone", "somebody", "everyone", "everybody", "anyone", "anybody", "nobody", "people",
                         "guys", "folks", "they", "he", "she", "we", "i"})
#: What is taken up that is no pastime ("took up the offer", "took up his suggestion").
NOT_TAKEN_UP = re.compile(
    r"(?i)^(?:(?:his|her|their|your|its|this|that|these|those|an?)\b|(?:the\s+)?(?:offer|suggestion|invitation|"
    r"idea|challenge|space|room|time|issue|matter|case|position|post|role|job|cause|slack)\b)"
)
#: Groups joined for something other than a pastime ("a support group", "the team call").
NOT_PASTIMES = frozenset({"support", "study", "project", "sales", "work", "team", "group", "new", "the"})
#: What "my new …" says that other rules read (a job, a person: ``PEOPLE``), or that is no
#: thing the user has.
NOT_POSSESSIONS = frozenset(
    {"job", "role", "position", "employer", "company", "year", "week", "month", "day", "favourite", "favorite",
     "obsession", "thing", "normal", "hobby"}
)
