"""Sentence templates of the long-conversation generator: planted facts, their questions,
assistant replies and distractor chatter.

Placeholders: ``{v}``/``{V}`` the value (capitalised), ``{a_v}`` the value with "a"/"an",
``{who}``/``{Who}`` another person, ``{name}``, ``{rel}`` a relation, ``{pron}``/``{Pron}``
she/he, ``{old}``/``{new}`` the two values of an update, ``{day}`` the weekday, ``{ago}`` a
relative time. A question never repeats its statement's distinctive words: it names the
category ("which herb") where the statement names the value ("cilantro").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FactSpec:
    """A single-statement fact: ``kind`` is preference, place, person, plan or event."""

    key: str
    kind: str
    category: str
    statements: tuple[str, ...]
    questions: tuple[str, ...]
    replies: tuple[str, ...]
    near_misses: tuple[str, ...]


@dataclass(frozen=True)
class UpdateSpec:
    """A value stated, then replaced in a later session by a new one."""

    key: str
    category: str
    old_statements: tuple[str, ...]
    old_mentions: tuple[str, ...]
    new_statements: tuple[str, ...]
    questions: tuple[str, ...]
    old_replies: tuple[str, ...]
    new_replies: tuple[str, ...]


@dataclass(frozen=True)
class HopSpec:
    """An attribute of a named person, said without the relation (the second hop)."""

    key: str
    category: str
    statements: tuple[str, ...]
    questions: tuple[str, ...]
    replies: tuple[str, ...]


@dataclass(frozen=True)
class MilestoneSpec:
    """Something that happened "today": the question asks when."""

    key: str
    statements: tuple[str, ...]
    questions: tuple[str, ...]
    replies: tuple[str, ...]


@dataclass(frozen=True)
class TopicSpec:
    """A topic the user comes back to with different values; the question picks one by date."""

    key: str
    category: str
    statements: tuple[str, ...]
    questions: tuple[str, ...]
    replies: tuple[str, ...]


GENERIC_ACKS = (
    "Thanks for telling me, I'll keep that in mind.",
    "Good to know! Is there anything you'd like me to do with that?",
    "Noted. Let me know if you want to talk it through.",
    "That's helpful context, thank you.",
    "Understood. Anything else on your mind today?",
    "Got it — I'll remember that for later.",
)

FACTS: tuple[FactSpec, ...] = (
    # --- preferences -------------------------------------------------------------------
    FactSpec(
        "pref.herb", "preference", "herb",
        ("Honestly I can't stand {v}. Even a little bit ruins the whole plate for me.",
         "Please never suggest recipes with {v} in them, I find it revolting.",
         "{V} is the one thing I always pick out of my food, it tastes like soap to me.",
         "Whoever decided to put {v} on everything owes me an apology. Yuck."),
        ("Which herb does the user dislike?",
         "What herb should recipes for me leave out?",
         "Is there a seasoning I hate? Remind me which one."),
        ("Noted, no {v}. Plenty of dishes work just as well without it.",
         "Fair enough, {v} is surprisingly divisive; part of the aversion is genetic.",
         "Understood, I'll steer clear of it when we talk about food."),
        ("Funny enough, {who} can't stand {v} either.",
         "{Who} puts {v} in literally everything, I don't get it."),
    ),
    FactSpec(
        "pref.music", "preference", "music",
        ("I've had {v} on repeat all week, it's basically all I listen to.",
         "Nothing gets me through a long drive like a good {v} playlist.",
         "If you ever make me a mixtape, make it {v}. Everything else feels flat to me."),
        ("What style of music does the user enjoy most?",
         "What kind of songs would I most like to hear at a party, going by my taste?",
         "Which genre is my go-to for listening?"),
        ("{V} is a great choice, there's so much depth in it.",
         "Ha, I can tell you really love {v}.",
         "Sounds like a good soundtrack for the week."),
        ("{Who} only listens to {v}, which drives me up the wall.",
         "{Who} tried to get me into {v} but it didn't stick."),
    ),
    FactSpec(
        "pref.cuisine", "preference", "cuisine",
        ("If I could only eat one kind of food forever, it would be {v}.",
         "We tried a new {v} place last month and I've been dreaming about it since. Absolute favourite.",
         "Nothing beats {v} food for me, I'd pick it for every birthday dinner."),
        ("Which cuisine does the user like best?",
         "What type of restaurant should I book for a treat, considering what I love to eat?",
         "Remind me what cooking style is my favourite?"),
        ("{V} food is wonderful, the flavours are so layered.",
         "I can see why, {v} cooking is hard to beat.",
         "Sounds delicious. Want some ideas for making it at home?"),
        ("{Who} insists {v} food is overrated.",
         "{Who} took me to a {v} restaurant once, it was fine."),
    ),
    FactSpec(
        "pref.sport", "preference", "sport",
        ("Thursday evenings are sacred: {v} with the club, no exceptions.",
         "I've been playing {v} twice a week and my fitness has never been better.",
         "Got absolutely destroyed at {v} last night, but I love it."),
        ("What sport does the user play regularly?",
         "Which sport do I practise every week?",
         "What's my usual way of staying active?"),
        ("{V} is a brilliant workout, and the club side of it sounds fun.",
         "Sounds like you've found your thing!",
         "Nice, regular exercise like that makes a big difference."),
        ("{Who} wants me to try {v} but I'm not convinced.",
         "{Who} used to play {v} at university."),
    ),
    FactSpec(
        "pref.instrument", "preference", "instrument",
        ("I've been learning the {v} since January, my neighbours must love me.",
         "Forty minutes of {v} scales every evening, my fingers hurt.",
         "Finally managed to play a whole piece on the {v} without stopping!"),
        ("Which instrument is the user learning to play?",
         "What am I making music on these days?",
         "What have I been teaching myself to play?"),
        ("Well done! The {v} takes real patience.",
         "That's real progress, keep going.",
         "Your neighbours will come round once they hear the results."),
        ("{Who} has played the {v} for twenty years.",
         "{Who} keeps an old {v} in the attic and never touches it."),
    ),
    FactSpec(
        "pref.author", "preference", "author",
        ("Reading anything by {v} feels like coming home.",
         "I've reread every single {v} novel at least twice.",
         "If I'm stuck on a plane, I want {v} in my bag."),
        ("Who is the user's favourite writer?",
         "Which novelist would I most enjoy getting a book by as a gift?",
         "Whose books do I love most?"),
        ("{V} is a wonderful writer, I can see why.",
         "Rereading is the best test of a book you love.",
         "Good taste! Want recommendations in a similar vein?"),
        ("{Who} keeps recommending {v}, but I couldn't get into it.",
         "{Who} met {v} at a signing once."),
    ),
    # --- places --------------------------------------------------------------------------
    FactSpec(
        "place.childhood", "place", "city",
        ("I spent my whole childhood in {v}, right by the water.",
         "Growing up in {v}, we spent every summer at my grandparents' farm.",
         "Back when I was a kid in {v}, we walked to school every day."),
        ("Where was the user raised?",
         "Which city is my hometown?",
         "What place did I grow up in, remind me?"),
        ("{V} sounds like a lovely place to be a kid.",
         "Those summers sound idyllic.",
         "Childhood places stay with us, don't they?"),
        ("{Who} grew up in {v}, just like half my office.",
         "{Who} spent a few years of childhood in {v}."),
    ),
    FactSpec(
        "place.university", "place", "city",
        ("I did my degree in {v}, four years of cheap rent and lots of coffee.",
         "My student years in {v} were the best of my life.",
         "Still in touch with my old housemates from uni in {v}."),
        ("In which city did the user attend university?",
         "Where did I go to college?",
         "Which town was I in for my higher education?"),
        ("{V} must have been a fun place to be a student.",
         "Uni friendships really do last.",
         "Sounds like a great few years."),
        ("{Who} studied in {v}, apparently the nightlife there is wild.",
         "{Who} did a masters in {v}."),
    ),
    FactSpec(
        "place.honeymoon", "place", "city",
        ("We spent our honeymoon in {v}, still the best two weeks of my life.",
         "Our anniversary is coming up; we might go back to {v}, where we went right after the wedding.",
         "I still have the photo from our honeymoon in {v} on the fridge."),
        ("Which city did the user visit as newlyweds?",
         "Where did my spouse and I travel just after getting married?",
         "What was the destination of our post-wedding trip?"),
        ("{V} is a romantic choice!",
         "Going back for an anniversary sounds lovely.",
         "What a nice memory to have on the fridge."),
        ("{Who} went to {v} on their honeymoon and didn't stop talking about it.",
         "{Who} got married in {v} last summer."),
    ),
    FactSpec(
        "place.parents", "place", "city",
        ("My parents retired to {v} last year, so that's where Christmas happens now.",
         "Mum and Dad finally sold the old house and bought a little flat in {v}.",
         "Calling my parents tonight; they're loving retirement in {v}."),
        ("Where do the user's mother and father live now?",
         "In which city did my folks settle after retiring?",
         "Where would I go to visit my mum and dad?"),
        ("{V} sounds like a good place to retire.",
         "That's a big change for them, glad they're enjoying it.",
         "Christmas somewhere new could be fun."),
        ("{Who}'s parents live in {v}, so they fly out there every summer.",
         "{Who} is thinking of retiring to {v} one day."),
    ),
    FactSpec(
        "place.office", "place", "city",
        ("Our office is in {v}, so I take the early train most days.",
         "The commute to {v} is killing me, ninety minutes each way.",
         "Three days a week in the {v} office, two at home."),
        ("Which city is the user's workplace in?",
         "Where do I travel to for work most days?",
         "Where is my company's building located?"),
        ("That's a long journey, at least the train lets you read.",
         "Ninety minutes each way is rough. Have you asked about more remote days?",
         "A hybrid week sounds like a decent balance."),
        ("{Who} works in {v}, lucky them.",
         "{Who} just got transferred to {v}."),
    ),
    FactSpec(
        "place.cabin", "place", "city",
        ("We have a tiny cabin outside {v} that we escape to whenever we can.",
         "Heading up to our little cabin near {v} this weekend, no wifi, bliss.",
         "The cabin near {v} needs a new roof before winter."),
        ("Where does the user have a holiday home?",
         "Near which city is my countryside retreat?",
         "Where do we go when we want to get away from it all?"),
        ("A cabin getaway sounds perfect.",
         "No wifi sounds like exactly what you need.",
         "Better to fix it before the weather turns."),
        ("{Who} rents a place near {v} every August.",
         "{Who} keeps saying we should all go to {v} together."),
    ),
    # --- people ----------------------------------------------------------------------------
    FactSpec(
        "person.manager", "person", "name",
        ("My boss, {v}, wants the report by Friday. No pressure.",
         "{V}, my manager, signed off on my leave, finally.",
         "Had my one-to-one with {v} today; {pron} thinks I'm ready for more responsibility."),
        ("Who does the user report to at work?",
         "What's the name of the person I answer to in my job?",
         "Who supervises me at the office?"),
        ("Sounds like {v} trusts you, that's a good sign.",
         "Friday deadlines are always tight, good luck!",
         "That's great feedback to get."),
        ("{Who}'s manager, {v}, sounds like a nightmare.",
         "{Who} used to work for someone called {v}."),
    ),
    FactSpec(
        "person.friend", "person", "name",
        ("{V} and I have been inseparable since primary school.",
         "Dinner with {v} tonight. We've been friends for twenty-five years.",
         "{V} is the only person who knew me before I was cool. Friends since we were six."),
        ("Who is the user's oldest friend?",
         "Which friend have I known the longest?",
         "Who's my friend from way back in childhood?"),
        ("Twenty-five years is a real friendship, enjoy dinner with {v}!",
         "Friends like that are rare.",
         "Ha! Childhood friends keep us honest."),
        ("{Who} has a childhood friend called {v} too.",
         "{Who} introduced me to someone named {v} at the party."),
    ),
    FactSpec(
        "person.partner", "person", "name",
        ("My partner {v} surprised me with tickets for tonight!",
         "{V} and I have been together six years this spring.",
         "{V} cooked dinner for me again, I'm so lucky to have {poss} love."),
        ("What is the name of the person the user is in a relationship with?",
         "Who is my significant other?",
         "What's my other half called?"),
        ("That's so thoughtful of {v}!",
         "Six years, congratulations to you both.",
         "Sounds like a keeper."),
        ("{Who} is dating someone called {v} now.",
         "{Who} has a new partner, {v}, who seems nice."),
    ),
    FactSpec(
        "person.neighbour", "person", "name",
        ("Our neighbour {v} keeps an eye on the house when we travel.",
         "{V} from next door brought us a lasagne when we were sick.",
         "{V}, who lives across the landing, lent us a ladder today."),
        ("What's the name of the person living beside the user?",
         "Who lives in the home adjacent to mine?",
         "Which of the people around me is my closest neighbour?"),
        ("Good neighbours are worth their weight in gold.",
         "That's so kind of {v}.",
         "Lucky you, not everyone knows the people nearby."),
        ("{Who}'s neighbour, {v}, is a retired judge.",
         "{Who} has a neighbour named {v} who plays drums at night."),
    ),
    FactSpec(
        "person.tutor", "person", "name",
        ("My Spanish tutor {v} says my accent is getting better.",
         "Lesson with {v} this afternoon; {pron}'s been helping me with my Spanish for a year.",
         "{V} gave me so much homework for our next Spanish session."),
        ("Who is helping the user learn a language?",
         "Who gives me my weekly language lessons?",
         "What's the name of my language teacher?"),
        ("Your accent improving is a great sign!",
         "A year of lessons, that's real commitment.",
         "Homework means {v} thinks you're ready for more."),
        ("{Who} has a German tutor called {v}.",
         "{Who} learned French from a teacher named {v}."),
    ),
    FactSpec(
        "person.doctor", "person", "name",
        ("Dr {v} said my blood results look fine, what a relief.",
         "Saw my GP, Dr {v}, about the cough that won't go away.",
         "Dr {v} wants me back in three months for a check-up."),
        ("Who is the user's family physician?",
         "What's the name of my doctor?",
         "Who do I see when I'm ill?"),
        ("Good news about the results!",
         "I hope the cough clears up soon.",
         "Regular check-ups are sensible."),
        ("{Who}'s doctor is a Dr {v}.",
         "{Who} swears by a Dr {v} in town."),
    ),
    # --- plans -----------------------------------------------------------------------------
    FactSpec(
        "plan.trip", "plan", "country",
        ("We're flying to {v} in the spring for a cousin's wedding.",
         "Booked it! Three weeks in {v} this summer.",
         "Been reading guidebooks about {v}, we go in four months."),
        ("Which country is the user going to visit?",
         "Where am I travelling abroad later this year?",
         "What's the destination of my upcoming holiday?"),
        ("{V} is a fantastic choice, you'll love it.",
         "Exciting! Want help with an itinerary?",
         "Four months is plenty of time to plan."),
        ("{Who} just got back from {v} and loved it.",
         "{Who} went to {v} last year and got food poisoning."),
    ),
    FactSpec(
        "plan.course", "plan", "course",
        ("I signed up for a {v} class that starts next month.",
         "Starting an evening course in {v} in a few weeks, wish me luck.",
         "Paid the deposit for a {v} workshop series starting soon."),
        ("What will the user be learning in their new class?",
         "Which skill have I enrolled to pick up?",
         "What am I going to be taught at evening school?"),
        ("{V} sounds like a fun thing to learn!",
         "Good luck, new skills are so rewarding.",
         "A structured course is a great way to start."),
        ("{Who} tried {v} once and gave up after a week.",
         "{Who} teaches {v} on weekends."),
    ),
    FactSpec(
        "plan.pet", "plan", "pet",
        ("We're thinking of getting {a_v} next year.",
         "I've been reading everything about caring for {a_v}, we might get one soon.",
         "Once we have a bigger place, {a_v} is top of the wish list."),
        ("What animal is the user planning to get?",
         "Which creature do I hope to bring home?",
         "What kind of pet am I considering?"),
        ("{A_v} is a lovely companion, but do your research on care.",
         "Exciting! They need quite specific setups.",
         "A bigger place will help for sure."),
        ("{Who} has {a_v} that escapes all the time.",
         "{Who} wants {a_v} but the landlord said no."),
    ),
    FactSpec(
        "plan.renovation", "plan", "room",
        ("Next spring we're finally redoing the {v}.",
         "Got three quotes for renovating the {v}, all eye-wateringly expensive.",
         "The builders start tearing out the {v} in two months."),
        ("Which part of the home is the user planning to remodel?",
         "What room am I about to have rebuilt?",
         "What's the upcoming home improvement project?"),
        ("A new {v} will make a big difference.",
         "Quotes always sting. Want help comparing them?",
         "Two months to get ready, plenty of time."),
        ("{Who} is redoing their {v} too, we compare notes.",
         "{Who} spent a fortune on their {v}."),
    ),
    FactSpec(
        "plan.race", "plan", "race",
        ("I'm training for the {v} in the autumn.",
         "Just got my place in the {v}! Training starts Monday.",
         "Long run on Sunday, the {v} is only five months away."),
        ("What endurance event is the user preparing for?",
         "Which big competition have I entered?",
         "What am I getting fit for this year?"),
        ("The {v}! That's a huge goal, exciting.",
         "Congratulations on getting a place!",
         "Five months is a good build-up."),
        ("{Who} did the {v} last year and swears never again.",
         "{Who} is volunteering at the {v}."),
    ),
    FactSpec(
        "plan.party", "plan", "theme",
        ("I'm throwing a {v} party for my fortieth.",
         "The invites for my birthday bash are out, the dress code is {v}.",
         "Costumes sorted for my birthday: everyone has to come {v} style."),
        ("What theme has the user chosen for their upcoming celebration?",
         "What should guests dress up as at my big day?",
         "What's the style of my upcoming birthday do?"),
        ("A {v} party sounds brilliant!",
         "Fun! Need help with decorations?",
         "Great idea, themed parties are always memorable."),
        ("{Who} had a {v} party last year.",
         "{Who} hates {v} parties, so that'll be fun."),
    ),
    # --- events ----------------------------------------------------------------------------
    FactSpec(
        "event.dog", "event", "breed",
        ("We adopted {a_v} from the shelter on Saturday!",
         "Meet the newest family member: {a_v} puppy, all paws and ears.",
         "Brought home {a_v} rescue yesterday, the cat is not impressed."),
        ("What kind of dog does the user have?",
         "What breed is my four-legged companion?",
         "What sort of hound did we bring home?"),
        ("Congratulations! {A_v} is a wonderful companion.",
         "Adoption is the best, enjoy the puppy chaos.",
         "The cat will come round eventually."),
        ("{Who} has {a_v} that howls all day.",
         "{Who} is fostering {a_v} this month."),
    ),
    FactSpec(
        "event.concert", "event", "band",
        ("Saw {v} live last night, my ears are still ringing.",
         "The {v} gig was unreal, they played for almost three hours.",
         "Finally got to see {v} in concert, ticked off the bucket list."),
        ("Which band did the user see perform?",
         "Who was the act at the show I went to?",
         "What group did I watch on stage recently?"),
        ("{V} live must have been incredible!",
         "Three hours, that's a proper show.",
         "Bucket list item done, love that."),
        ("{Who} saw {v} years ago and still talks about it.",
         "{Who} had tickets for {v} but got sick."),
    ),
    FactSpec(
        "event.injury", "event", "body",
        ("I sprained my {v} playing football on Sunday.",
         "Physio says my {v} will take six weeks to heal after the fall.",
         "Slipped on the stairs and bruised my {v}, so I'm hobbling around."),
        ("Which part of the body did the user injure?",
         "What did I hurt recently?",
         "Where am I recovering from an injury?"),
        ("Ouch, rest that {v} properly.",
         "Six weeks is a while, follow the physio's advice.",
         "Sorry to hear that, take it easy."),
        ("{Who} broke their {v} skiing.",
         "{Who} had surgery on their {v} last year."),
    ),
    FactSpec(
        "event.contest", "event", "contest",
        ("Our team won the {v} last night!",
         "We came first at the {v}, I still can't believe it.",
         "Trophy for the {v} is on my desk now."),
        ("What competition did the user's team win?",
         "Which contest did we take the top prize in?",
         "What event did my team triumph at?"),
        ("Congratulations on winning the {v}!",
         "Amazing, well deserved.",
         "A trophy on the desk is a great reminder."),
        ("{Who}'s team lost the {v} by one point.",
         "{Who} organises the {v} every year."),
    ),
    FactSpec(
        "event.bike", "event", "bike",
        ("Finally bought {a_v} bike, my commute is going to be so much nicer.",
         "Picked up my new {v} from the shop today!",
         "Took the new {v} out for its first ride, so smooth."),
        ("Which brand of bicycle did the user purchase?",
         "What make is my new two-wheeler?",
         "Who manufactured the cycle I just got?"),
        ("{V} makes lovely bikes, enjoy!",
         "A good bike makes commuting a pleasure.",
         "First rides on a new bike are the best."),
        ("{Who} rides a {v} and won't shut up about it.",
         "{Who} had a {v} stolen last year."),
    ),
    FactSpec(
        "event.exhibition", "event", "artist",
        ("Spent the afternoon at the {v} exhibition, completely worth the queue.",
         "The {v} retrospective at the museum blew me away.",
         "Finally saw the {v} show before it closes."),
        ("Whose artwork did the user go to see?",
         "Which painter's show did I visit?",
         "What artist's gallery show did I attend?"),
        ("{V} in person must be something else.",
         "Retrospectives are great for seeing how an artist evolves.",
         "Glad you made it before it closed."),
        ("{Who} thinks {v} is overrated.",
         "{Who} has a {v} print in the hallway."),
    ),
    FactSpec(
        "event.lost", "event", "lost",
        ("I left my {v} on the tram this morning, so annoying.",
         "Somehow lost my {v} between the office and the station.",
         "Can't find my {v} anywhere, I think I dropped it on the bus."),
        ("What did the user misplace on their commute?",
         "What item did I lose while travelling around town?",
         "What went missing from my belongings recently?"),
        ("Try the transport lost property office, they're surprisingly good.",
         "So annoying! Maybe retrace your steps?",
         "Fingers crossed someone hands it in."),
        ("{Who} lost their {v} at the airport.",
         "{Who} found a {v} on the train and handed it in."),
    ),
)

UPDATES: tuple[UpdateSpec, ...] = (
    UpdateSpec(
        "update.city", "city",
        ("Our flat in {old} is tiny but the neighbourhood is lovely.",
         "Living in {old} has its perks, the bakeries mostly.",
         "It's pouring in {old} today, perfect excuse to stay in."),
        ("Rent in {old} went up again, ugh.",
         "Walked along the river in {old} after work, so pretty."),
        ("We're finally unpacked in {new}! Leaving {old} was harder than I thought.",
         "Life in {new} is treating us well since the move.",
         "Just signed the lease on our new place in {new}, the movers come Saturday."),
        ("Which city does the user live in now?",
         "Where am I currently based?",
         "Where is home for me these days?"),
        ("{Old} sounds charming.", "Cosy flats have their charm."),
        ("Congratulations on the move to {new}!", "New city, new adventures. How's it going?"),
    ),
    UpdateSpec(
        "update.drink", "drink",
        ("I can't function before my morning {old}.",
         "Third {old} of the day and it's not even noon.",
         "Nothing like a {old} to start the day."),
        ("Out of {old} again, need to go shopping.",),
        ("I've switched to {new} in the mornings, way less jittery than the {old}.",
         "These days it's {new} first thing, every day. Big change for me.",
         "Gave up my old habit; {new} is my wake-up drink now."),
        ("What does the user drink to start the day these days?",
         "What's my current morning beverage?",
         "What's in my mug when I wake up nowadays?"),
        ("A good morning ritual makes all the difference.", "Ha, that's a lot of {old}!"),
        ("{New} is a nice change!", "Less jittery sounds like a win."),
    ),
    UpdateSpec(
        "update.employer", "company",
        ("Work at {old} is hectic this quarter.",
         "Big all-hands at {old} today, lots of reorg rumours.",
         "My team at {old} shipped the release, finally."),
        ("{Old} is doing layoffs, fingers crossed.",),
        ("Big news: I accepted an offer from {new}! Handing in my notice at {old} tomorrow.",
         "First month at {new} done, the team is great.",
         "Signed the contract with {new} today, new chapter."),
        ("Which company does the user work for now?",
         "Who is my current employer?",
         "Where do I have a job these days?"),
        ("Busy quarters are exhausting, hang in there.", "Reorg rumours are stressful."),
        ("Congratulations on the move to {new}!", "A great team makes all the difference."),
    ),
    UpdateSpec(
        "update.car", "car",
        ("My {old} needs new tyres again.",
         "Drove the {old} up to the lake, it handled fine.",
         "The {old} is making a weird rattling noise."),
        ("The {old} failed its inspection.",),
        ("Traded in the old car, I'm driving a {new} now!",
         "Loving the new {new}, so much nicer than the {old}.",
         "Picked up the keys to my {new} this morning."),
        ("What car does the user drive now?",
         "Which vehicle do I currently own?",
         "What am I driving these days?"),
        ("Tyres add up, worth getting a good set.", "Get that rattle checked before it gets worse."),
        ("Enjoy the {new}!", "A new car is always exciting."),
    ),
    UpdateSpec(
        "update.phone", "phone",
        ("My {old} battery dies by lunchtime.",
         "Dropped my {old} again, the screen is cracked.",
         "The camera on my {old} is still great, honestly."),
        ("My {old} froze again during a call.",),
        ("Got a {new} to replace my broken phone.",
         "Setting up my new {new}, transferring photos takes forever.",
         "The {new} arrived today, so much faster than the {old}."),
        ("Which phone does the user currently use?",
         "What handset do I have now?",
         "What mobile am I using these days?"),
        ("Battery life is the worst part of an older handset.", "Cracked screens are so annoying."),
        ("Enjoy the {new}!", "Transfers always take ages, worth it though."),
    ),
    UpdateSpec(
        "update.hobby", "hobby",
        ("I've been really into {old} lately.",
         "Spent my evening on {old} again, it's so relaxing.",
         "Joined a {old} group, they meet on Wednesdays."),
        ("Bought more gear for {old}, oops.",),
        ("I've dropped everything else for {new}, can't get enough.",
         "{New} has completely taken over my free time, I stopped doing {old}.",
         "Signed up for a {new} club, it's my main thing now."),
        ("What hobby is the user most into these days?",
         "What's my main pastime at the moment?",
         "How do I spend my free time lately?"),
        ("{Old} sounds relaxing.", "Groups make hobbies more fun."),
        ("{New}! That's a fun one.", "New passions are the best."),
    ),
)

RELATIONS: tuple[tuple[str, str], ...] = (
    ("sister", "female"), ("brother", "male"), ("cousin", "any"), ("aunt", "female"),
    ("uncle", "male"), ("niece", "female"), ("nephew", "male"), ("sister-in-law", "female"),
    ("brother-in-law", "male"), ("godmother", "female"), ("stepbrother", "male"),
    ("flatmate", "any"),
)

HOP_INTROS = (
    "My {rel} {name} is coming over for dinner on Sunday.",
    "Had a long call with my {rel}, {name}, last night.",
    "{name}, my {rel}, just turned thirty. Time flies.",
    "Picking up my {rel} {name} from the airport later.",
    "My {rel} {name} sent me the funniest video today.",
)
HOP_INTRO_REPLIES = (
    "That sounds lovely, enjoy the time with {name}.",
    "Family calls like that are precious.",
    "Ha, I hope the flight is on time.",
    "Nice! How is {name} doing?",
)

HOPS: tuple[HopSpec, ...] = (
    HopSpec(
        "hop.city", "city",
        ("{name} just moved to {v} and is loving it.",
         "{name} finally found a flat in {v}, right by the river.",
         "Helped {name} pack boxes all day, {pron}'s off to {v} next week."),
        ("Where does my {rel} live these days?",
         "Which city is the user's {rel} living in now?",
         "Where has my {rel} relocated to?"),
        ("{V} is a great place to start fresh.", "Moving is exhausting, good on you for helping."),
    ),
    HopSpec(
        "hop.job", "job",
        ("{name} got the job, {pron}'s going to be {a_v}!",
         "{name} has been working as {a_v} for a few months now.",
         "{name} just qualified as {a_v} after years of study."),
        ("What does my {rel} do for a living?",
         "What is the profession of the user's {rel}?",
         "What's my {rel}'s line of work?"),
        ("Congratulations to {name}!", "That's a demanding career, good for them."),
    ),
    HopSpec(
        "hop.hobby", "hobby",
        ("{name} has gotten really into {v} lately.",
         "{name} spends every free evening on {v} now.",
         "{name} showed me photos from {poss} {v} trip, so cool."),
        ("What pastime has my {rel} picked up?",
         "Which hobby is the user's {rel} keen on?",
         "What does my {rel} do in their spare time?"),
        ("{V} sounds like fun!", "It's great when people find their thing."),
    ),
    HopSpec(
        "hop.pet", "pet",
        ("{name} adopted {a_v} and sends me photos every day.",
         "{name}'s {v} chewed through a phone cable, chaos.",
         "{name} takes {poss} {v} everywhere, even to the café."),
        ("What animal does my {rel} keep as a pet?",
         "Which creature lives with the user's {rel}?",
         "What kind of pet does my {rel} own?"),
        ("Pet photos are the best kind of messages.", "Ha, classic pet behaviour."),
    ),
)

MILESTONES: tuple[MilestoneSpec, ...] = (
    MilestoneSpec(
        "when.driving",
        ("Passed my driving test this morning, on the second attempt!",
         "I'm officially allowed on the road: test passed today!"),
        ("When did I get my driving licence?", "On what date did the user qualify to drive?"),
        ("Congratulations! Second time lucky.", "Freedom! Drive safe."),
    ),
    MilestoneSpec(
        "when.thesis",
        ("Just submitted my thesis, I can't believe it's done.",
         "The thesis is handed in. Four years, done today."),
        ("On what date did the user hand in their dissertation?", "When did I finish my doctoral write-up?"),
        ("Huge congratulations, that's an enormous achievement.", "Time to celebrate and sleep."),
    ),
    MilestoneSpec(
        "when.promotion",
        ("I got promoted today, senior designer at last!",
         "They told me this afternoon: I'm the new team lead."),
        ("When was I given a more senior role?", "On which day did the user step up at work?"),
        ("Congratulations, well deserved!", "That's a big step, enjoy it."),
    ),
    MilestoneSpec(
        "when.engaged",
        ("We got engaged tonight!! I said yes.",
         "Big news: there's a ring on my finger as of this evening."),
        ("On which day did my partner and I decide to marry?", "When did the user get a proposal?"),
        ("Congratulations to you both!", "What wonderful news!"),
    ),
    MilestoneSpec(
        "when.godchild",
        ("My best friend's baby was born this morning and I'm the godparent, 3.2 kilos and perfect.",
         "The baby arrived a few hours ago! I get to be the godparent."),
        ("When was my godchild born?", "On what date did the user's godchild arrive?"),
        ("Congratulations to the whole family!", "What a lovely day."),
    ),
    MilestoneSpec(
        "when.10k",
        ("Ran my first 10k without stopping today!",
         "Ten kilometres, no walking breaks, done this morning."),
        ("When did I first complete a ten-kilometre run?", "On which day did the user hit their running distance goal?"),
        ("Amazing, that's a real milestone.", "Well done! Stretch well tonight."),
    ),
    MilestoneSpec(
        "when.teeth",
        ("Had my wisdom teeth out today, living on soup.",
         "Dentist took two wisdom teeth out this afternoon, ouch."),
        ("When did I have dental surgery?", "On what date did the user have an operation on their mouth?"),
        ("Rest up, and stick to soft food.", "Ouch! Hope the swelling goes down quickly."),
    ),
    MilestoneSpec(
        "when.citizenship",
        ("Citizenship ceremony this morning, it's official!",
         "I'm a citizen now, took the oath today."),
        ("When did I get my new nationality?", "On what date did the user become a naturalised citizen?"),
        ("Congratulations, what a moment.", "That's a big day, well done."),
    ),
)

#: Things done on a weekend day, said on that day.
WEEKEND_STATEMENTS = (
    "Spent the whole day {v}, I'm exhausted but happy.",
    "Today was all about {v}, my legs are jelly.",
    "We went {v} this morning, what a way to spend a {day}.",
    "First time {v} today and I'm hooked.",
)
WEEKEND_QUESTIONS = ("What did I do last weekend?", "How did I spend last weekend?", "What was I up to last weekend?")
WEEKEND_REPLIES = ("Sounds like a brilliant day out!", "That sounds like so much fun.", "Great way to spend the day.")

TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(
        "ago.garden", "vegetable",
        ("The {v} seedlings finally came up in the garden!",
         "Harvested the first {v} from the garden today.",
         "Something is eating my {v} plants in the garden, grr."),
        ("What news did I share about my vegetable patch {ago}?", "What was growing in my plot {ago}, from what I told you?"),
        ("Gardening wins are the best.", "Slugs, probably. Try copper tape."),
    ),
    TopicSpec(
        "ago.bookclub", "book",
        ("Our book club picked {v} for this month.",
         "Halfway through {v} for book club, it's dense.",
         "Book club argued about {v} for two hours tonight."),
        ("Which novel was I reading with my reading group {ago}?", "What title was my literary circle on {ago}?"),
        ("Great pick.", "Book club debates are half the fun."),
    ),
    TopicSpec(
        "ago.cooking", "dish",
        ("Made {v} from scratch tonight, turned out great.",
         "Attempted {v} for dinner, total disaster.",
         "Finally nailed my {v} recipe this evening."),
        ("What did I cook {ago}?", "Which meal did I make at home {ago}?"),
        ("Homemade is always better.", "Practice makes perfect!"),
    ),
    TopicSpec(
        "ago.series", "series",
        ("Binge-watched half of {v} tonight, can't stop.",
         "Started {v} this evening, the first episode is so tense.",
         "Just finished {v}, what an ending."),
        ("Which show was I watching {ago}?", "What TV programme did I mention {ago}?"),
        ("No spoilers, I promise.", "Good shows are dangerous for bedtime."),
    ),
    TopicSpec(
        "ago.paint", "colour",
        ("We painted the hallway {v} today.",
         "The bedroom walls are {v} now, took all afternoon.",
         "Picked {v} for the study walls, first coat done."),
        ("What colour did we go with for the walls {ago}?", "Which paint shade did I tell you about {ago}?"),
        ("Sounds lovely and fresh.", "Painting is so satisfying."),
    ),
)

AGO = {"yesterday": "yesterday", "2_weeks_ago": "two weeks ago", "3_weeks_ago": "three weeks ago"}

#: How another person is named in near-miss facts (never a relation of the hop facts).
WHO = (
    "my coworker {n}", "my friend {n}", "{n} from the gym", "{n} from my running club",
    "my old classmate {n}", "{n} on my team", "a guy at work called {n}",
    "my friend's partner {n}", "{n} from the choir",
)

WRAP_PREFIXES = ("Morning! ", "Quick update: ", "Random thought. ", "Okay. ", "Hey! ", "Right. ", "News! ")
WRAP_SUFFIXES = (
    " Anyway, how's your day going?",
    " Anyway, can you help me plan meals for the week?",
    " Sorry, tangent.",
    " Not sure why I'm telling you this.",
    " Anyway, back to work.",
    " Also, remind me to drink more water.",
)

#: Questions that echo a word or two of their statement, as people often do ("Where did we
#: spend our honeymoon?"). For single facts and updates, parallel to the statements (the
#: echo of the statement used); for "when" milestones and dated topics, any of them.
#: About 40% of the questions are echoes, the rest pure paraphrases, so neither lexical nor
#: dense retrieval has the data to itself.
ECHO_RATE = 0.4
ECHOES: dict[str, tuple[str, ...]] = {
    "pref.herb": ("Which herb ruins the whole plate for me?", "Which ingredient do I find revolting in recipes?",
                  "What herb tastes like soap to the user?", "What herb do I want nobody to put on everything?"),
    "pref.music": ("What music has the user had on repeat?", "What playlist do I want for a long drive?",
                   "What genre should a mixtape for me be?"),
    "pref.cuisine": ("What food could the user eat forever?",
                     "Which cuisine have I been dreaming about since trying a new place?",
                     "What food would I pick for a birthday dinner?"),
    "pref.sport": ("What does the user do with the club on Thursday evenings?", "Which sport has improved my fitness?",
                   "What sport did I get destroyed at?"),
    "pref.instrument": ("What have I been learning since January?",
                        "Which instrument do I practise scales on every evening?",
                        "On which instrument did I play a whole piece without stopping?"),
    "pref.author": ("Which author's books feel like coming home to the user?", "Whose novels have I reread at least twice?",
                    "Which writer do I want in my bag on a plane?"),
    "place.childhood": ("Where did I spend my childhood?",
                        "Which city did the user grow up in, with summers at the grandparents' farm?",
                        "Where did the user walk to school as a kid?"),
    "place.university": ("Where did I do my degree?", "Where did the user spend their student years?",
                         "Where did I go to uni?"),
    "place.honeymoon": ("Where did we spend our honeymoon?", "Where did the user go right after the wedding?",
                        "Which city is in the honeymoon photo on my fridge?"),
    "place.parents": ("Where did the user's parents retire to?", "Where did Mum and Dad buy their little flat?",
                      "Where are my parents enjoying retirement?"),
    "place.office": ("Where is the user's office?", "Where do I commute to?",
                     "Which office do I go to three days a week?"),
    "place.cabin": ("Where is our cabin?", "Near which city is the user's little cabin?",
                    "Where is the cabin that needs a new roof?"),
    "person.manager": ("Who is my boss?", "What's the name of the user's manager?",
                       "Who did I have my one-to-one with?"),
    "person.friend": ("Who have I been inseparable from since primary school?",
                      "Who has the user been friends with for twenty-five years?",
                      "Which friend have I known since we were six?"),
    "person.partner": ("What's my partner's name?", "Who has the user been together with for six years?",
                       "Who cooked dinner for me again?"),
    "person.neighbour": ("Who is our neighbour?", "Who lives next door to the user?", "Who lent us a ladder?"),
    "person.tutor": ("Who is my Spanish tutor?", "Who has been helping the user with Spanish?",
                     "Who gives me homework for my Spanish sessions?"),
    "person.doctor": ("Which doctor said my blood results look fine?", "Who is the user's GP?",
                      "Which doctor wants me back for a check-up?"),
    "plan.trip": ("Where are we flying for the wedding?", "Where am I spending three weeks this summer?",
                  "Which country have I been reading guidebooks about?"),
    "plan.course": ("What class did I sign up for?", "What evening course is the user starting?",
                    "Which workshop series did I pay the deposit for?"),
    "plan.pet": ("What are we thinking of getting next year?", "What animal have I been reading about caring for?",
                 "What's top of our wish list once we have a bigger place?"),
    "plan.renovation": ("What are we redoing next spring?", "Which room did I get renovating quotes for?",
                        "What will the builders tear out?"),
    "plan.race": ("What am I training for in the autumn?", "Which event did the user get a place in?",
                  "What event is five months away for me?"),
    "plan.party": ("What kind of party am I throwing for my fortieth?", "What's the dress code for my birthday bash?",
                   "What costume style is my birthday?"),
    "event.dog": ("What did we adopt from the shelter?", "What breed is the user's new puppy?",
                  "What rescue did I bring home?"),
    "event.concert": ("Who did I see live?", "Which gig did the user go to?", "Which concert was on my bucket list?"),
    "event.injury": ("What did I sprain playing football?", "What does the physio say will take six weeks to heal?",
                     "What did I bruise on the stairs?"),
    "event.contest": ("What did our team win?", "Where did we come first?", "Which trophy is on my desk?"),
    "event.bike": ("What bike did I buy?", "What did the user pick up from the shop?",
                   "What did I take out for its first ride?"),
    "event.exhibition": ("Which exhibition did I spend the afternoon at?",
                         "Whose retrospective at the museum did the user see?",
                         "Which show did I see before it closes?"),
    "event.lost": ("What did I leave on the tram?", "What did the user lose between the office and the station?",
                   "What did I drop on the bus?"),
    "update.city": ("Where are we finally unpacked?", "Where have we lived since the move?", "Where is our new place?"),
    "update.drink": ("What do I drink in the mornings now?", "What does the user have first thing these days?",
                     "What's my wake-up drink?"),
    "update.employer": ("Which company's offer did I accept?", "Which company have I been at for a month?",
                        "Who did I sign a contract with?"),
    "update.car": ("What am I driving now?", "What's the user's new car?", "Which car did I pick up the keys to?"),
    "update.phone": ("What replaced my broken phone?", "What new phone am I setting up?", "Which phone arrived?"),
    "update.hobby": ("What have I dropped everything else for?", "What has taken over my free time?",
                     "Which club did I sign up for?"),
    "when.driving": ("When did I pass my driving test?",),
    "when.thesis": ("When did I submit my thesis?",),
    "when.promotion": ("When did I get promoted?",),
    "when.engaged": ("When did we get engaged?",),
    "when.godchild": ("When was the baby born?",),
    "when.10k": ("When did I run my first 10k?",),
    "when.teeth": ("When did I have my wisdom teeth out?",),
    "when.citizenship": ("When was my citizenship ceremony?",),
    "ago.garden": ("What did I say about the garden {ago}?",),
    "ago.bookclub": ("What was the book club reading {ago}?",),
    "ago.cooking": ("What did I make for dinner {ago}?",),
    "ago.series": ("What was I binge-watching {ago}?",),
    "ago.paint": ("What colour were the walls painted {ago}?",),
}
