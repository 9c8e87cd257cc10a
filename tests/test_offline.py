"""The offline extractor: English rules, determinism, extractive summaries within budget."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langchain_tiered_memory.extraction import offline
from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.extraction import USER_ENTITY, Extractor, TurnExtraction, make_extractor
from langchain_tiered_memory.extraction.offline import (
    OfflineExtractor,
    compress_extractive,
    extractive_episode,
    extract_rules,
    extractive_summary,
    split_sentences,
    third_person_verb,
    to_third_person,
)
from langchain_tiered_memory.tokens import TiktokenCounter


@pytest.fixture(scope="module")
def counter():
    return TiktokenCounter()


@pytest.fixture(scope="module")
def ex(counter):
    return OfflineExtractor(counter=counter)


def turn(*texts: str) -> TurnExtraction:
    return extract_rules([HumanMessage(t) for t in texts])


def entity(result: TurnExtraction, name: str):
    matches = [e for e in result.entities if e.name == name]
    assert matches, f"no entity {name!r} in {[e.name for e in result.entities]}"
    return matches[0]


def memories(result: TurnExtraction, memory_type: str | None = None) -> list[str]:
    return [m.content for m in result.memories if memory_type in (None, m.memory_type)]


def test_alice_with_no_model_configured(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    extractor = make_extractor(None)
    assert extractor.offline
    result = extractor.extract_turn([HumanMessage("My name is Alice, I live in Paris and I prefer green tea.")])
    alice = entity(result, "Alice")
    assert alice.type == "person"
    assert alice.attributes["location"] == "Paris"
    preferences = [m for m in result.memories if m.memory_type == "preference"]
    assert len(preferences) == 1 and "green tea" in preferences[0].content
    assert result.summary is None


class TestRules:
    def test_alice_details(self):
        result = turn("My name is Alice, I live in Paris and I prefer green tea.")
        assert entity(result, "Alice").attributes == {
            "location": "Paris",
            "prefers": "green tea",
            "relation_to_user": "self",
        }
        assert entity(result, "Paris").type == "place"
        assert [(m.content, m.memory_type, m.importance) for m in result.memories] == [
            ("The user's name is Alice.", "fact", 0.8),
            ("The user lives in Paris.", "fact", 0.8),
            ("The user prefers green tea.", "preference", 0.7),
        ]

    @pytest.mark.parametrize(
        "text, name",
        [
            ("Hi, I'm Bob.", "Bob"),
            ("call me Jim", "Jim"),
            ("my name is maria garcia", "Maria"),
            ("My name's Ana Lopez and I work at Acme.", "Ana Lopez"),
            ("Hi, it's Sam!", "Sam"),
            ("Hey there, this is Priya.", "Priya"),
        ],
    )
    def test_names(self, text, name):
        result = turn(text)
        assert result.entities[0].name == name
        assert result.entities[0].attributes["relation_to_user"] == "self"
        assert f"The user's name is {name}." in memories(result)

    @pytest.mark.parametrize("text", [
        "I'm French.", "I'm tired", "I'm Not sure", "My name is not important",
        # Without a greeting, "it's X" answers a question (a chat's lines).
        "It's Seattle, I'm stoked for my game there next month!", "It's Shia Labeouf!",
    ])
    def test_not_names(self, text):
        result = turn(text)
        assert not any(e.attributes.get("relation_to_user") == "self" and e.name != USER_ENTITY for e in result.entities)

    def test_places(self):
        result = turn("I'm from Lyon but I moved to New York last year.")
        user = entity(result, USER_ENTITY)
        assert user.attributes["hometown"] == "Lyon" and user.attributes["location"] == "New York"
        assert entity(result, "New York").type == "place"
        assert memories(result) == ["The user is from Lyon.", "The user lives in New York."]
        assert entity(turn("i live in paris"), USER_ENTITY).attributes["location"] == "Paris"
        # Settling in says where home is now.
        settled = turn("We're finally unpacked in Bordeaux! Leaving Dresden was hard.")
        assert entity(settled, USER_ENTITY).attributes["location"] == "Bordeaux"

    def test_dislikes(self):
        result = turn("I hate cilantro and I can't stand loud music.")
        assert memories(result, "preference") == ["The user hates cilantro.", "The user can't stand loud music."]
        assert entity(result, USER_ENTITY).attributes["dislikes"] == "cilantro, loud music"
        assert memories(turn("I don't like coffee"), "preference") == ["The user doesn't like coffee."]

    def test_likes(self):
        assert memories(turn("I really love hiking in the Alps!"), "preference") == ["The user loves hiking in the Alps."]
        assert memories(turn("I'm really into rock climbing"), "preference") == ["The user is into rock climbing."]
        assert memories(turn("My favourite colour is blue"), "preference") == ["The user's favourite colour is blue."]

    @pytest.mark.parametrize("text", ["I'd like a table for two.", "I like it.", "Do I like tea?", "I would like to know more"])
    def test_not_preferences(self, text):
        assert memories(turn(text), "preference") == []

    def test_jobs(self):
        result = turn("I work as a software engineer at Google.")
        user = entity(result, USER_ENTITY)
        assert user.attributes["job"] == "software engineer" and user.attributes["employer"] == "Google"
        assert entity(result, "Google").type == "organization"
        assert memories(result) == ["The user works as a software engineer at Google."]
        assert memories(turn("I'm a nurse.")) == ["The user works as a nurse."]
        assert memories(turn("I'm a teacher at Lincoln High School")) == [
            "The user works as a teacher at Lincoln High School."
        ]
        assert entity(turn("I work at Acme Corp"), "Acme Corp").type == "organization"
        # The word a question asks with ("who is my current employer?") is in the memory.
        assert memories(turn("I work at Acme Corp")) == ["The user works at Acme Corp, their employer."]
        assert memories(turn("I work for myself")) == []
        # A new job says who the employer is now; "started at the gym" names none.
        offer = turn("Big news: I accepted an offer from Stark Logistics! Handing in my notice tomorrow.")
        assert entity(offer, USER_ENTITY).attributes["employer"] == "Stark Logistics"
        assert entity(turn("I'm starting a new job at Initech on Monday."), USER_ENTITY).attributes["employer"] == "Initech"
        assert not any("employer" in e.attributes for e in turn("I started at the gym last week.").entities)

    def test_relations(self):
        result = turn("My wife is Sarah and my best friend is called Tom.")
        assert entity(result, "Sarah").attributes == {"relation_to_user": "wife"}
        assert entity(result, "Tom").attributes == {"relation_to_user": "best friend"}
        assert entity(result, "Sarah").type == "person"
        assert entity(result, USER_ENTITY).attributes["wife"] == "Sarah"
        assert memories(result) == ["The user's wife is Sarah.", "The user's best friend is Tom."]
        assert entity(turn("Sarah is my sister."), "Sarah").attributes == {"relation_to_user": "sister"}
        # Family by marriage and by choice are relations too.
        assert entity(turn("My godmother Helga is coming for dinner."), "Helga").attributes == {
            "relation_to_user": "godmother"
        }
        assert entity(turn("My sister-in-law Beatriz sent a video."), "Beatriz").attributes == {
            "relation_to_user": "sister-in-law"
        }
        assert entity(turn("my boss Greg is annoying"), "Greg").attributes == {"relation_to_user": "boss"}
        rex = entity(turn("I have two kids and a dog named Rex"), "Rex")
        assert rex.type == "other" and rex.attributes == {"relation_to_user": "dog"}

    @pytest.mark.parametrize("text, name, relation", [
        ("Our neighbour Pedro keeps an eye on the house when we travel.", "Pedro", "neighbour"),
        ("Our son Leo starts school in September.", "Leo", "son"),
        ("Right. Beatriz from next door brought us a lasagne when we were sick.", "Beatriz", "neighbour"),
        ("Yusuf, who lives across the landing, lent us a ladder.", "Yusuf", "neighbour"),
        ("I had coffee with Tom from work.", "Tom", "coworker"),
    ])
    def test_a_household_and_where_someone_is_known_from_say_the_relation(self, text, name, relation):
        # "our" is a household's; "from next door" names a neighbour without the word that a
        # question would use ("who lives beside me?" is nearer "the user's neighbour is Pedro").
        result = turn(text)
        assert entity(result, name).attributes == {"relation_to_user": relation}
        assert f"The user's {relation} is {name}." in memories(result)

    @pytest.mark.parametrize("text", [
        "Someone from work called me.", "The guy from next door is loud.",
        # A capitalised word opening a sentence is no name by itself: a person does something.
        "Noise from next door kept me up all night.", "Calls from work never stop.", "Greetings from work!",
        "Music from next door is so loud.", "Builders from next door started at 7am.",
    ])
    def test_no_one_named_is_no_relation(self, text):
        assert memories(turn(text)) == []

    def test_instruction(self):
        result = turn("Always answer in French.")
        assert [(m.content, m.memory_type, m.importance) for m in result.memories] == [
            ("Always answer in French.", "instruction", 0.9)
        ]
        assert memories(turn("From now on, never use emoji please"), "instruction") == ["Never use emoji."]
        assert memories(turn("Don't ever call me Jimmy."), "instruction") == ["Never call the user Jimmy."]
        assert memories(turn("You should always cite your sources"), "instruction") == ["Always cite your sources."]
        # A habit is not an instruction.
        assert [(m.content, m.memory_type) for m in turn("I always drink coffee in the morning").memories] == [
            ("The user always drinks coffee in the morning.", "fact")
        ]
        # Nor is encouragement or news between people: an instruction asks how to answer or
        # address the user.
        assert memories(turn("Always keep it brief.")) == ["Always keep it brief."]
        assert memories(turn("Always remind me to stretch.")) == ["Always remind the user to stretch."]
        for text in ("Never give up!", "Always try something new.", "Never been on a sports team.",
                     "Always a joy to see him so happy.", "Never be afraid to ask for help.",
                     "Always there for me.", "Never let us down."):
            assert memories(turn(text), "instruction") == [], text

    def test_remember_that(self):
        result = turn("Remember that my flight is on May 3.")
        assert [(m.content, m.memory_type, m.importance) for m in result.memories] == [
            ("The user's flight is on May 3.", "fact", 0.9)
        ]
        assert memories(turn("Please remember that I need to call my mom on Sunday")) == [
            "The user needs to call their mom on Sunday."
        ]
        can = turn("Can you remember that I prefer window seats?")
        assert [(m.content, m.memory_type, m.importance) for m in can.memories] == [
            ("The user prefers window seats.", "preference", 0.9)
        ]
        assert entity(can, USER_ENTITY).attributes["prefers"] == "window seats"
        assert memories(turn("Don't forget to water the plants")) == [
            "The user wants to remember to water the plants."
        ]

    @pytest.mark.parametrize("text, memory", [
        ("Signed up for a whittling club, it's my main thing now.",
         "The user's hobby is whittling: they joined a whittling club."),
        ("I joined a local climbing group last month.", "The user's hobby is climbing: they joined a climbing group."),
        ("We've enrolled in salsa classes!", "The user is learning salsa: they signed up for salsa classes."),
        ("I signed up for a pottery class that starts next month.",
         "The user is learning pottery: they signed up for a pottery class."),
        ("I got into running this year.", "The user's hobby is running: they took it up."),
        ("I took up going to the gym.", "The user's hobby is going to the gym: they took it up."),
        ("I took up inline speed skating.", "The user's hobby is inline speed skating: they took it up."),
        ("I took up pottery this spring.", "The user's hobby is pottery: they took it up."),
        ("I got really into bouldering this year", "The user's hobby is bouldering: they took it up."),
        ("Setting up my new Galaxy A54, transferring photos takes forever.", "The user has a new Galaxy A54."),
        ("Unboxing my new Pixel 8 tonight, finally.", "The user has a new Pixel 8."),
        # The thing ends where the sentence goes on about it.
        ("My new phone is amazing.", "The user has a new phone."),
        ("Our new place in Lisbon was a bargain.", "The user has a new place in Lisbon."),
        ("My new Pixel 8 arrived today.", "The user has a new Pixel 8."),
        ("Picked up my new Brompton from the shop today!", "The user has a new Brompton."),
        ("my new glasses are scratched", "The user has new glasses."),
        ("I took up pottery and it's great", "The user's hobby is pottery: they took it up."),
        ("Got a Galaxy S23 to replace my broken phone.",
         "The user's new phone is a Galaxy S23, replacing their old one."),
    ])
    def test_a_pastime_taken_up_or_a_new_thing_had_names_its_kind(self, text, memory):
        # The kind ("hobby", "phone") is what a later question asks with ("how do I spend my
        # free time?"), in words the statement does not use.
        assert memory in memories(turn(text))

    @pytest.mark.parametrize("text, memory", [
        ("I'm learning Spanish.", "The user is learning Spanish."),
        ("I've been learning the sitar since January, my neighbours must love me.",
         "The user has been learning the sitar."),
        ("I have been studying Japanese for a year.", "The user has been studying Japanese for a year."),
    ])
    def test_what_the_user_is_learning_in_either_tense(self, text, memory):
        assert memories(turn(text)) == [memory]

    @pytest.mark.parametrize("text", [
        "I joined a support group for new parents.", "I joined the sales team in May.", "My new job starts Monday.",
        "My new boss is called Tom.", "Did you join a club?", "I never took up golf.", "My new favourite is chai.",
        "I got into Oxford!", "We got into a fight.", "I took up the offer from Acme.", "I took up his suggestion.",
    ])
    def test_what_is_no_pastime_or_new_thing(self, text):
        assert not [m for m in memories(turn(text)) if "hobby is" in m or "has a new" in m or "is learning" in m]

    def test_health_age_and_experiences(self):
        result = turn("I'm vegan and allergic to peanuts. I'm 34 years old and married.")
        assert entity(result, USER_ENTITY).attributes == {
            "diet": "vegan",
            "allergies": "peanuts",
            "age": "34",
            "marital_status": "married",
            "relation_to_user": "self",
        }
        visit = turn("I visited Rome last summer.")
        assert [(m.content, m.memory_type) for m in visit.memories] == [
            ("The user visited Rome last summer.", "experience")
        ]
        assert entity(visit, "Rome").type == "place"

    def test_proper_nouns(self):
        result = turn("We talked to Microsoft about the Azure deal. Yesterday was long. I use an iPhone.")
        assert [(e.name, e.type) for e in result.entities] == [
            ("Microsoft", "other"),
            ("Azure", "other"),
            ("iPhone", "product"),
        ]  # "We", "Yesterday" and "I" are not entities
        assert result.memories == []
        assert [e.name for e in turn("Paris is lovely.").entities] == []  # sentence-initial, unknown
        assert [(e.name, e.type) for e in turn("Paris is lovely. The Louvre in Paris too.").entities] == [
            ("Paris", "place"),
            ("Louvre", "other"),
        ]
        assert [e.name for e in turn("New York is huge").entities] == ["New York"]
        assert [e.name for e in turn("THIS IS ALL CAPS SHOUTING").entities] == []

    def test_a_model_number_belongs_to_the_name_and_a_count_does_not(self):
        def names(text: str) -> list[str]:
            return [e.name for e in turn(text).entities]

        assert names("My old phone died, so I got a OnePlus 12 and a Galaxy S23 for my son.") == ["OnePlus 12", "Galaxy S23"]
        assert ("Tesla Model 3", "product") in [(e.name, e.type) for e in turn("We drove the Tesla Model 3 home.").entities]
        assert names("I ran into Anna 2 weeks ago.") == ["Anna"]
        assert names("We land in Paris 10:30 tomorrow, then Berlin 2019 memories.") == ["Paris", "Berlin"]
        assert names("We stayed at the Hilton 3 nights.") == ["Hilton"]

    def test_an_interjection_or_a_short_day_is_no_part_of_a_name(self):
        def names(text: str) -> list[str]:
            return [e.name for e in turn(text).entities]

        # Greetings open a sentence capitalised and ran into the name after them.
        assert names("Woohoo Melanie, that is great news!") == ["Melanie"]
        assert names("Yeah Mel, see you on Fri at the Louvre.") == ["Mel", "Louvre"]

    def test_proper_nouns_stop_at_punctuation_and_share_a_list_context(self):
        assert [(e.name, e.type) for e in turn("I visited Rome, Paris and Berlin.").entities] == [
            ("Rome", "place"),
            ("Paris", "place"),
            ("Berlin", "place"),
        ]
        assert [(e.name, e.type) for e in turn("We met Dr. Smith at the Bank of America office.").entities] == [
            ("Dr Smith", "person"),
            ("Bank of America", "organization"),
        ]

    def test_known_entities_fix_spelling_and_allow_sentence_start(self):
        result = extract_rules([HumanMessage("acme is great. i work at acme.")], known_entities=["ACME"])
        assert entity(result, "ACME").type == "organization"
        assert entity(result, USER_ENTITY).attributes["employer"] == "ACME"
        assert [e.name for e in extract_rules([HumanMessage("Bob called.")], known_entities=["Bob"]).entities] == ["Bob"]

    def test_only_the_users_messages(self):
        result = extract_rules(
            [
                SystemMessage("My name is System and I live in Nowhere."),
                AIMessage("I'm Claude, I live in the cloud and I love Paris."),
                HumanMessage("Nice."),
            ]
        )
        assert result == TurnExtraction(method="rules")

    def test_events_the_user_reports(self):
        def said(text: str) -> list[str]:
            return [m.content for m in turn(text).memories]

        assert said("I had surgery on my knee in March.") == ["The user had surgery on their knee in March."]
        assert said("I just got a new puppy named Max!") == ["The user got a new puppy named Max."]
        assert said("I painted a sunset last week.") == ["The user painted a sunset last week."]
        assert said("I took my kids to the museum yesterday.") == ["The user took their kids to the museum yesterday."]
        # Not an event to keep: an obligation, a good time, a pronoun, or a pastime (its own rule).
        for text in ("I had to leave early.", "I had a great time!", "I had so much fun at the park.",
                     "I got to see the show.", "I saw it.", "I got it!",
                     # The verb inside another clause, or what one has.
                     "The advice I got was really helpful.", "I saw your photo of you two dancing.",
                     "I've got people like you cheering me on."):
            assert said(text) == [], text
        assert said("I took up archery.") == ["The user's hobby is archery: they took it up."]

    def test_what_the_user_has_been_doing_and_is_considering(self):
        def said(text: str) -> list[str]:
            return [m.content for m in turn(text).memories]

        assert said("Since we last chatted, I've been blogging about politics and the government.") == [
            "The user has been blogging about politics and the government."
        ]
        assert said("I have been volunteering at the animal shelter on weekends.") == [
            "The user has been volunteering at the animal shelter on weekends."
        ]
        assert said("I'm considering going into policymaking because of my degree.") == [
            "The user is considering going into policymaking."
        ]
        assert said("I'm thinking about getting a new bike.") == ["The user is considering getting a new bike."]
        # A passing state, talk, or a question: nothing to remember.
        for text in ("Enjoy yourself!", "I really enjoy myself when I paint.",
                     "I've been thinking about it a lot.", "I've been looking forward to this!",
                     "I've been feeling great lately.", "Have you been running lately?",
                     "I'm thinking about you.", "Are you considering moving?"):
            assert said(text) == [], text

    def test_a_wish_or_a_compliment_is_no_fact_about_the_user(self):
        def said(text: str) -> list[str]:
            return [m.content for m in turn(text).memories]

        # Opening a sentence with no subject, a verb in the present bids, wishes or praises;
        # "have a blast" is a good time, not a possession. Each line is one a chat said.
        for text in ("Have a great day!", "Take care and have a good one!", "Enjoy your trip!",
                     "Love the tattoo, did you just get it?", "Love and acceptance should be everyone's right.",
                     "We get our creative on and have a blast together.", "Speak to you soon!"):
            assert said(text) == [], text
        # A dropped "I" in the past still says what the user did; after "I …" and "and",
        # any verb does.
        assert said("Moved to Lisbon last week.") == ["The user lives in Lisbon."]
        assert said("Love experimenting with spices.") == ["The user loves experimenting with spices."]
        for text in ("Love seeing your dedication to helping others.", "Love hearing about it!"):
            assert said(text) == [], text
        assert said("I grew up in Porto and have two cats.") == ["The user is from Porto.", "The user has two cats."]
        assert said("I live in Oslo and work at Acme and love it.") == [
            "The user lives in Oslo.", "The user works at Acme, their employer.",
        ]

    def test_a_long_statement_ends_where_a_clause_of_it_did(self):
        def said(text: str) -> list[str]:
            return [m.content for m in turn(text).memories]

        # Cut at its word limit, a statement read "… last Saturday - it was really." (a
        # chat's lines, each).
        assert said("I ran a charity race for mental health last Saturday - it was really rewarding to see "
                    "so many people there.") == ["The user ran a charity race for mental health last Saturday."]
        assert said("I went to a pride parade last Friday and it was awesome - so much love there!") == [
            "The user went to a pride parade last Friday and it was awesome."
        ]
        assert said("I love to read, especially.") == ["The user loves to read."]
        # A clause or a time where the object should be: nothing to keep.
        for text in ("I started a few days ago.", "I saw while hiking the other day."):
            assert said(text) == [], text

    def test_an_idiom_is_no_job_and_no_home(self):
        # Each from a chat: the job rule read "a sucker for" as a job at "any superhero",
        # the home rule "stay in shape" as a place.
        for text in ("I'm a sucker for any superhero - everyone has their own rad story.",
                     "I stay in shape by hitting the gym and taking my dog out.", "We stay in touch by email."):
            result = turn(text)
            assert result.memories == [], text
            assert not any({"job", "employer", "location"} & set(e.attributes) for e in result.entities), text
        assert [m.content for m in turn("I'm a volunteer for the Red Cross.").memories] == [
            "The user works as a volunteer at Red Cross."
        ]
        assert turn("This is a chance to learn something new and work as a team.").memories == []
        # What follows the dislike is its reason or a filler, not part of it.
        assert [m.content for m in turn("I don't like dogs, that's why I have cats.").memories] == [
            "The user doesn't like dogs."
        ]
        assert entity(turn("I don't like bowling itself, to be honest."), USER_ENTITY).attributes["dislikes"] == (
            "bowling itself"
        )

    def test_praise_of_what_another_shows_is_no_taste_of_the_users(self):
        # Each from a chat: the like rule kept "likes: your turtles", "to", "every day" and
        # "the user said" ("like I said") in the user's profile.
        for text in ("So cute! I love your turtles so much!", "I love his tech and that sarcastic humor.",
                     "Glad you like it. Yeah, I love to.",
                     "I wish I could get one, but like I said, it's tough.", "I love their work."):
            result = turn(text)
            assert result.memories == [], text
            assert not any({"likes", "loves"} & set(e.attributes) for e in result.entities), text
        # Gratitude for a job is the user's state (kept whole, as a disclosure), still no taste.
        result = turn("I'm grateful to have a job I enjoy every day.")
        assert [(m.content, m.about) for m in result.memories] == [
            ("The user is grateful to have a job the user enjoys every day.", "state")
        ]
        assert not any({"likes", "loves", "enjoys"} & set(e.attributes) for e in result.entities)
        # A taste of the user's own still is one, with what the user owns.
        assert [m.content for m in turn("I love my turtles.", "I love to travel.").memories] == [
            "The user loves their turtles.", "The user loves to travel."
        ]
        assert [m.content for m in turn("I hate your attitude.").memories] == []

    def test_a_past_form_is_kept_as_said(self):
        # "I never knew … until I met …" was rewritten "never knews … mets".
        assert to_third_person("I never knew it until I met them") == "the user never knew it until the user met them"
        assert to_third_person("I said I made it") == "the user said the user made it"
        assert to_third_person("I need it and I read a lot") == "the user needs it and the user reads a lot"

    def test_questions_and_hypotheticals_are_skipped(self):
        assert turn("Where do I live?", "If I lived in Rome I would be happy", "What if I moved to Oslo?").memories == []

    def test_user_entity_without_a_name(self):
        result = turn("I live in Berlin.")
        assert result.entities[0].name == USER_ENTITY
        assert result.entities[0].attributes == {"location": "Berlin", "relation_to_user": "self"}

    def test_deterministic(self):
        texts = [
            "My name is Alice, I live in Paris and I prefer green tea.",
            "My wife Sarah and I visited Rome. Remember that my flight is on May 3. Always answer in French.",
        ]
        first = extract_rules([HumanMessage(t) for t in texts])
        for _ in range(3):
            assert extract_rules([HumanMessage(t) for t in texts]) == first
        assert OfflineExtractor().extract_turn([HumanMessage(t) for t in texts]) == first


class TestLanguage:
    def test_third_person(self):
        assert to_third_person("my mom and my dad") == "the user's mom and their dad"
        assert to_third_person("I need to call my mom") == "the user needs to call their mom"
        assert to_third_person("I'm late and I've lost my keys") == "the user is late and the user has lost their keys"
        assert to_third_person("tell me about myself") == "tell the user about themselves"
        assert [third_person_verb(v) for v in ("try", "go", "watch", "play", "worked", "need", "can")] == [
            "tries", "goes", "watches", "plays", "worked", "needs", "can",
        ]

    def test_sentences(self):
        assert split_sentences("Dr. Smith lives in the U.S. now. He likes e.g. tea! Really?\n- item one\n2. item two") == [
            "Dr. Smith lives in the U.S. now.",
            "He likes e.g. tea!",
            "Really?",
            "item one",
            "item two",
        ]


CONVERSATION = [
    HumanMessage("Hi there!"),
    AIMessage("Hello! How can I help you today?"),
    HumanMessage("My name is Alice, I live in Paris and I prefer green tea."),
    AIMessage("Nice to meet you, Alice. Paris is a lovely city; green tea is a great choice."),
    HumanMessage("I'm planning a trip to Rome on May 3 with a budget of 2000 euros."),
    AIMessage("Great. I'd suggest booking the flight early. Shall we look at hotels near the Colosseum?"),
    HumanMessage("Yes, let's book the Hotel Artemide. Thanks!"),
    AIMessage("Done: we agreed on Hotel Artemide for three nights."),
]


class TestExtractiveSummary:
    @pytest.mark.parametrize("budget", [0, 1, 5, 12, 30, 60, 100, 1000])
    def test_bounded_by_tokens(self, counter, budget):
        text = extractive_summary(CONVERSATION, max_tokens=budget, counter=counter)
        assert counter.count_text(text) <= budget
        if budget >= 30:
            assert "Alice" in text

    def test_salient_sentences_in_order_with_speakers(self, counter):
        text = extractive_summary(CONVERSATION, max_tokens=60, counter=counter)
        lines = text.splitlines()
        assert lines == [
            "user: My name is Alice, I live in Paris and I prefer green tea.",
            "user: I'm planning a trip to Rome on May 3 with a budget of 2000 euros.",
            "assistant: Done: we agreed on Hotel Artemide for three nights.",
        ]
        assert "Hi there!" not in extractive_summary(CONVERSATION, max_tokens=1000, counter=counter)

    def test_a_named_speaker_is_credited_by_name(self, counter):
        # Two people talking through one app: both are "user" messages, told apart by name.
        chat = [
            HumanMessage("I ran a charity race for mental health last Saturday.", name="Mel"),
            HumanMessage("That sounds great! I joined a pottery class this week.", name="Caro"),
            AIMessage("Sounds like a busy week for both of you."),
        ]
        text = extractive_summary(chat, max_tokens=200, counter=counter)
        assert "Mel: I ran a charity race for mental health last Saturday." in text.splitlines()
        assert "Caro: I joined a pottery class this week." in text.splitlines()
        assert "user:" not in text
        episode = extractive_episode(chat, counter)
        assert "Mel: I ran a charity race" in episode.summary and "user:" not in episode.summary

    def test_long_messages_stay_bounded(self, counter):
        wall = HumanMessage(" ".join(f"Sentence {i} mentions Zurich and {i * 7} francs." for i in range(300)))
        blob = HumanMessage("x" * 5000)
        for budget in (20, 200, 800):
            text = extractive_summary([wall, blob], max_tokens=budget, counter=counter)
            assert 0 < counter.count_text(text) <= budget

    def test_folds_into_the_previous_summary(self, counter):
        first = extractive_summary(CONVERSATION[:4], max_tokens=200, counter=counter)
        folded = extractive_summary(CONVERSATION[4:], previous=first, max_tokens=200, counter=counter)
        assert folded.startswith(first)  # room for everything: the old summary is kept whole
        assert "Rome" in folded and counter.count_text(folded) <= 200

    def test_oldest_lines_go_first(self, counter):
        previous = "\n".join(f"user: old point {i} about gardening tomatoes." for i in range(20))
        new = [HumanMessage("I'm planning a trip to Rome on May 3 with a budget of 2000 euros.")]
        folded = extractive_summary(new, previous=previous, max_tokens=60, counter=counter)
        assert counter.count_text(folded) <= 60
        lines = folded.splitlines()
        assert "Rome" in lines[-1]
        kept = [int(line.split()[3]) for line in lines[:-1]]
        assert kept and kept == list(range(20 - len(kept), 20))  # a contiguous run of the newest

    def test_compress(self, counter):
        summary = "\n".join(f"user: point {i} about the trip to Rome on day {i}." for i in range(50))
        for budget in (0, 10, 40, 100):
            assert counter.count_text(compress_extractive(summary, budget, counter)) <= budget
        assert compress_extractive("short", 10, counter) == "short"


class TestOfflineExtractor:
    def test_protocol(self, ex):
        assert isinstance(ex, Extractor)
        assert ex.offline is True and ex.name.startswith("offline")

    def test_summary_only_with_evicted(self, ex, counter):
        assert ex.extract_turn(CONVERSATION[2:4], summary="old").summary is None
        result = ex.extract_turn(CONVERSATION[6:], evicted=CONVERSATION[:6], summary="user: earlier.", summary_max_tokens=50)
        assert result.summary and counter.count_text(result.summary) <= 50
        assert "Rome" in result.summary

    def test_episode(self, ex):
        episode = ex.extract_episode(CONVERSATION)
        assert "Alice" in episode.summary
        assert "Yes, let's book the Hotel Artemide." in episode.decisions
        assert "Done: we agreed on Hotel Artemide for three nights." in episode.decisions
        assert episode.outcome == "Done: we agreed on Hotel Artemide for three nights."
        assert episode.topics[:3] == ["Alice", "Hotel Artemide", "Paris"]
        assert ex.extract_episode(CONVERSATION) == episode
        with pytest.raises(InvalidInputError):
            ex.extract_episode([])

    def test_compress_summary(self, ex, counter):
        summary = "\n".join(f"assistant: step {i} of the plan for Rome." for i in range(30))
        assert counter.count_text(ex.compress_summary(summary, 30)) <= 30

    def test_logs_offline_mode_once(self, caplog, monkeypatch):
        monkeypatch.setattr(offline.extractor, "_noticed", False)
        with caplog.at_level(logging.WARNING, logger="langchain_tiered_memory"):
            OfflineExtractor()
            OfflineExtractor()
            make_extractor(OfflineExtractor())
        notices = [r for r in caplog.records if "offline mode" in r.getMessage()]
        assert len(notices) == 1
        assert "OPENAI_API_KEY" in notices[0].getMessage() and "model=" in notices[0].getMessage()
