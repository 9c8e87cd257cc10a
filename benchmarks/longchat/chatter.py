"""Distractor chatter: small talk, requests on other topics and their realistic replies.

None of it names a value of the fact vocabularies (a test checks that every answer occurs
only where it was planted), so chatter can only mislead by topic and wording, as real
conversation does.
"""

from __future__ import annotations

#: (user, assistant) exchanges on topics no question asks about.
HELP = (
    ("Can you help me write a short email to reschedule tomorrow's meeting to Thursday?",
     "Sure. \"Hi all, something has come up tomorrow, so could we move our meeting to Thursday at the same time? "
     "Apologies for the short notice, and thanks for your flexibility.\" Want it more formal?"),
    ("What's the difference between a Roth and a traditional retirement account?",
     "The main difference is when you pay tax: one is funded with taxed money and grows tax-free, the other "
     "gives you a deduction now and is taxed when you withdraw. Which is better depends on your tax rate now versus later."),
    ("How long should I boil an egg for a runny yolk?",
     "About six minutes from boiling water for a large egg, then straight into cold water. Seven minutes if you "
     "want it jammy rather than runny."),
    ("Explain recursion like I'm five.",
     "Imagine a set of nesting dolls. To find the smallest one you open a doll, and if there's another doll "
     "inside you do the same thing again, until there's nothing left to open. That's recursion."),
    ("How do I remove duplicates from a list in Python but keep the order?",
     "Use a dict, since it keeps insertion order: list(dict.fromkeys(items)). It runs in linear time and "
     "works for any hashable items."),
    ("Any tips for falling asleep faster?",
     "Keep a consistent schedule, dim the screens an hour before bed, keep the room cool, and if you can't "
     "sleep after twenty minutes get up and read something dull until you're drowsy."),
    ("What's a good way to structure a one-page CV?",
     "Lead with a two-line summary, then experience with measurable results, then skills, then education. "
     "Keep bullet points short and start each with a verb."),
    ("Why is the sky blue?",
     "Sunlight scatters off the molecules in the air, and shorter blue wavelengths scatter much more than red "
     "ones, so blue light reaches your eyes from every direction of the sky."),
    ("Can you suggest a name for a spreadsheet that tracks household bills?",
     "A few options: \"Home Ledger\", \"Bills and Bits\", \"Monthly Outgoings\" or simply \"Household Budget\". "
     "Short and boring tends to be easiest to find later."),
    ("How do I get red wine out of a carpet?",
     "Blot, don't rub. Then dab with a mix of cold water and a little washing-up liquid, or sprinkle salt to "
     "draw it out, and blot again. Hot water can set the stain."),
    ("What's the rule for using 'affect' versus 'effect'?",
     "Usually 'affect' is the verb and 'effect' is the noun: the weather affects my mood; the weather has an "
     "effect on my mood. There are exceptions, but that covers most cases."),
    ("Could you give me a quick stretching routine for after sitting all day?",
     "Try a standing forward fold, a hip flexor lunge on each side, a chest opener against a doorframe and "
     "slow neck rolls. Thirty seconds each, breathing slowly."),
    ("How do compound interest calculations work?",
     "Each period you earn interest on the original amount plus the interest already earned. The formula is "
     "P times (1 + r/n) to the power of n times t."),
    ("Is it worth learning SQL if I mostly use spreadsheets?",
     "Yes, if your data keeps growing. SQL makes filtering, joining and summarising large tables much easier, "
     "and the basics take only a weekend or two to learn."),
    ("What's a polite way to decline a wedding invitation?",
     "Thank them warmly, say you're sorry you can't make it without over-explaining, and wish them a wonderful "
     "day. Sending a card or a small gift is a nice touch."),
    ("How often should I water a snake plant?",
     "Rarely. Every two to three weeks in summer and about once a month in winter, and only when the soil is "
     "completely dry. Overwatering is the usual killer."),
    ("Can you explain what an API is?",
     "An API is a set of rules that lets one program ask another for data or actions, like a waiter taking "
     "your order to the cook and bringing back the dish."),
    ("What should I pack for a two-day business trip?",
     "Two outfits plus one spare top, chargers, a laptop, toiletries in a clear bag, any documents, and "
     "comfortable shoes. A small notebook never hurts."),
    ("How do I make my laptop battery last longer?",
     "Lower the screen brightness, close background apps, use the battery saver mode, and avoid keeping it at "
     "full charge on the desk all day if it supports a charge limit."),
    ("What's the best way to memorise a speech?",
     "Break it into sections, learn the structure before the words, rehearse out loud while walking, and "
     "record yourself. Cue cards with a keyword per section help."),
    ("Tell me a fun fact about octopuses.",
     "Octopuses have three hearts and blue blood, and most of their neurons are in their arms, which can taste "
     "what they touch."),
    ("How can I stop procrastinating on boring tasks?",
     "Make the first step tiny, set a timer for fifteen minutes, remove distractions, and reward yourself "
     "after. Starting is usually the hardest part."),
    ("What's a good gift for someone who has everything?",
     "Experiences work well: a cooking class, concert tickets, a nice dinner. Or something consumable and "
     "luxurious they wouldn't buy themselves."),
    ("Can you summarise the plot of Hamlet in two sentences?",
     "Prince Hamlet learns his uncle murdered his father to take the throne, and he feigns madness while "
     "plotting revenge. His hesitation leads to a chain of deaths, including his own."),
    ("How do I politely remind a client about an unpaid invoice?",
     "Keep it friendly and factual: reference the invoice number and due date, attach a copy, and ask if "
     "there's anything holding up payment. Follow up a week later if needed."),
    ("What's the difference between weather and climate?",
     "Weather is what happens on a given day; climate is the average pattern over decades. A cold week "
     "doesn't change the climate."),
    ("How do I calculate a 15 percent tip quickly?",
     "Take ten percent by moving the decimal point, halve that for five percent, and add the two together."),
    ("Could you proofread this: 'Their going to the meeting tomorow'?",
     "Corrected: \"They're going to the meeting tomorrow.\" \"They're\" is short for \"they are\", and "
     "\"tomorrow\" has two r's."),
    ("What are some good habits for a healthy back?",
     "Move regularly, set up your screen at eye level, strengthen your core, lift with your legs, and avoid "
     "sitting in one position for hours."),
    ("How does a heat pump work?",
     "It moves heat instead of making it: a refrigerant absorbs warmth from outside air or the ground, gets "
     "compressed to raise its temperature, and releases that heat indoors."),
    ("Any advice for a first job interview?",
     "Research the company, prepare three stories that show your strengths, practise answers out loud, "
     "prepare a couple of questions for them, and arrive ten minutes early."),
    ("What's a quick vegetarian lunch I can take to work?",
     "A grain bowl travels well: cooked rice or quinoa, chickpeas, roasted vegetables, some feta and a lemon "
     "dressing in a separate pot."),
    ("How do I back up my photos without paying for cloud storage?",
     "Copy them to an external drive, keep a second copy at a friend's or family member's place, and repeat "
     "monthly. Two copies in two places beats one perfect system."),
    ("What does 'amortisation' mean on a loan?",
     "It's paying off a loan in regular instalments, where each payment covers that period's interest plus a "
     "slice of the principal, so the balance falls to zero by the end."),
    ("Can you recommend a simple breathing exercise for stress?",
     "Box breathing: in for four counts, hold for four, out for four, hold for four. Repeat for a couple of "
     "minutes and your heart rate usually settles."),
    ("Why do onions make you cry?",
     "Cutting them releases enzymes that produce a sulphur gas, which reacts with the water in your eyes to "
     "form a mild irritant. Chilling the onion first helps."),
    ("How should I start learning to touch type?",
     "Use a free typing tutor, keep your fingers on the home row, don't look at the keys, and practise "
     "fifteen minutes a day. Accuracy first, speed comes later."),
    ("What's the best way to clean a cast iron pan?",
     "Hot water and a brush, no soaking. Dry it on the hob, then rub a thin layer of oil over it while it's "
     "warm."),
    ("Can you write a two-line birthday message for a colleague?",
     "\"Happy birthday! Thanks for making the office a brighter place, hope you have a fantastic day.\""),
    ("How do I negotiate a higher salary offer?",
     "Know the market range, thank them for the offer, state a specific number with a reason, and be "
     "prepared to discuss benefits if the base salary can't move."),
    ("What causes hiccups?",
     "A sudden involuntary contraction of the diaphragm, often triggered by eating fast, fizzy drinks or "
     "excitement. The snap of the vocal cords closing makes the sound."),
    ("Is it better to rent or buy a home?",
     "It depends on how long you'll stay, prices relative to rents, your savings and how much flexibility "
     "you need. Over a short horizon renting often wins."),
    ("How do I set up a simple monthly budget?",
     "List your income, subtract fixed costs, set limits for variable spending, and send a fixed amount to "
     "savings on payday. Review at the end of each month."),
    ("What's the difference between a virus and a bacterium?",
     "Bacteria are living single cells that can reproduce on their own; viruses are much smaller and need a "
     "host cell to copy themselves. Antibiotics only work on bacteria."),
    ("Can you help me name my new houseplant?",
     "How about Leafy McLeafface, Sir Photosynthesis, Fernando, or Planty Dumpty?"),
)

#: (user, assistant) small talk.
SMALL_TALK = (
    ("Hi! How are you today?", "I'm doing well, thanks for asking! What's on your mind?"),
    ("Ugh, Mondays.", "Mondays can be a slog. Anything I can help lighten?"),
    ("It's so grey outside today.", "Grey days can be draining. A short walk at lunchtime can help, even under clouds."),
    ("I'm so tired this week.", "Sorry to hear that. Has it been busy, or just not sleeping well?"),
    ("Thanks for yesterday, that helped a lot.", "I'm glad it was useful! Happy to help again anytime."),
    ("Tell me a joke.", "Why don't scientists trust atoms? Because they make up everything."),
    ("Do you ever get bored?", "Not really, every conversation is a bit different. What have you been up to?"),
    ("Just checking in.", "Good to hear from you! Anything new?"),
    ("Finally Friday!", "Hooray! Any plans to relax?"),
    ("The heating broke again.", "That's miserable, especially in cold weather. Have you called the landlord or an engineer?"),
    ("I have a dentist appointment on Thursday, dreading it.", "Totally understandable. It's usually quicker than you expect."),
    ("My internet has been terrible all day.", "Annoying! Restarting the router or moving closer to it sometimes helps."),
    ("Can't decide what to have for dinner.", "Something quick? An omelette, a stir-fry or pasta are hard to beat on a busy night."),
    ("I think I'm coming down with a cold.", "Rest, fluids and something warm. Hope you feel better soon."),
    ("Long day at work, glad it's over.", "Well done for getting through it. Time to put your feet up."),
    ("Good morning!", "Good morning! Hope the day is off to a good start."),
    ("What's a good word for 'happy' that isn't 'happy'?", "Cheerful, content, delighted, elated, upbeat or chuffed, depending on the tone."),
    ("I keep forgetting to call my bank.", "Maybe set a reminder for tomorrow morning, first thing?"),
    ("The neighbours are having a party and it's so loud.", "Earplugs or white noise might save the evening."),
    ("I spilled coffee on my keyboard, great start.", "Oh no! Unplug it, turn it upside down and let it dry fully before using it."),
    ("Is it normal to feel unmotivated in winter?", "Very common. Less daylight affects energy and mood; getting outside in the morning helps many people."),
    ("Just got back from the supermarket, it was packed.", "Weekend rush? Going early in the morning is usually quieter."),
    ("I need to clean my flat but can't be bothered.", "Try a fifteen-minute timer and one room at a time. It often snowballs."),
    ("My train was delayed again.", "Frustrating. At least you can claim compensation on some routes."),
    ("What day is it even?", "Ha, it's been one of those weeks, hasn't it?"),
    ("I bought way too many snacks.", "There are worse problems to have!"),
    ("Lovely sunny day here.", "Enjoy it! Perfect for a walk."),
    ("I'm bored.", "Want a suggestion? A podcast, a puzzle, or a short walk usually does it."),
    ("Haven't slept well, the street was noisy.", "That's rough. A nap this afternoon might help."),
    ("Okay, that's all for now, thanks!", "Anytime. Talk soon!"),
)

#: Composed requests: phrasing x topic, answered with three tips.
TIP_PHRASES = (
    "Can you give me a few tips for {t}?",
    "Any advice on {t}?",
    "I'm struggling with {t}, what would you suggest?",
    "What's the best approach to {t}?",
)
TIP_TOPICS = (
    ("staying focused while working from home", ("Set fixed start and end times", "Keep a separate work corner", "Batch your messages twice a day")),
    ("keeping houseplants alive", ("Check the light each plant needs", "Water less than you think", "Use pots with drainage")),
    ("writing clearer emails", ("Put the request in the first line", "Use short paragraphs", "End with a clear next step")),
    ("saving money on groceries", ("Plan meals before shopping", "Buy store brands", "Cook in batches and freeze portions")),
    ("running better meetings", ("Share an agenda in advance", "Keep it to thirty minutes", "Finish with owners and deadlines")),
    ("decluttering a wardrobe", ("Remove anything unworn for a year", "Do one shelf at a time", "Donate the same day")),
    ("learning a new language", ("Practise a little every day", "Speak from the first week", "Use spaced repetition flashcards")),
    ("managing a busy inbox", ("Unsubscribe aggressively", "Use two or three folders at most", "Answer quick ones immediately")),
    ("taking better photos with a phone", ("Clean the lens", "Use natural light", "Follow the rule of thirds")),
    ("drinking more water", ("Keep a bottle on your desk", "Drink a glass with every meal", "Set gentle reminders")),
    ("public speaking", ("Know your opening by heart", "Pause instead of saying um", "Practise in front of a friend")),
    ("reducing screen time", ("Turn off non-essential notifications", "Charge the phone outside the bedroom", "Use grayscale mode")),
    ("organising a small pantry", ("Use vertical space", "Keep shelves labelled", "Store rarely used gadgets elsewhere")),
    ("writing a cover letter", ("Tailor it to the role", "Lead with your strongest result", "Keep it under a page")),
    ("making friends in a new place", ("Join a weekly club", "Say yes to invitations", "Follow up after meeting people")),
    ("sticking to a morning routine", ("Prepare the night before", "Start with one habit", "Keep the same wake-up time")),
    ("planning a surprise party", ("Pick a trusted co-organiser", "Keep the guest list small", "Have a cover story ready")),
    ("keeping a journal", ("Write three lines a day", "Keep it by the bed", "Don't worry about style")),
    ("reading more books", ("Carry one everywhere", "Read before bed instead of scrolling", "Quit books you don't enjoy")),
    ("preparing for exams", ("Test yourself rather than reread", "Space out sessions", "Sleep well the night before")),
)
TIP_REPLIES = (
    "Here are three that work for most people: {a}; {b}; and {c}. Start with whichever feels easiest.",
    "A few ideas: first, {a}. Second, {b}. Third, {c}. Small changes add up quickly.",
    "Good question. I'd suggest: {a}, {b}, and {c}. Want me to go deeper on any of them?",
)

#: Sentences an assistant adds around its answer; 1-4 of them follow most replies, so
#: assistant turns have realistic lengths (a few sentences, ~60-120 tokens).
ELABORATIONS = (
    "If it helps, I can turn this into a short checklist you can keep on your phone.",
    "It's also worth noticing how you feel about it in a week or two, since first impressions often shift.",
    "Small, consistent steps usually work better than one big push, so don't worry about getting it perfect.",
    "Let me know if you'd like me to go into more detail on any part of that.",
    "Everyone's situation is a bit different, so treat this as a starting point rather than a rule.",
    "A lot of people find it useful to write things like this down, even briefly, so they're easy to revisit.",
    "If anything changes, just tell me and we can adjust the plan together.",
    "I'm happy to help you think through the practical side whenever you're ready.",
    "It sounds like you've already put some thought into this, which is a good sign.",
    "One thing that often gets overlooked is how much time and energy something like this takes, so be kind to yourself.",
    "If you want, we can come back to this later and see how it went.",
    "There's no single right answer here; it mostly depends on what matters most to you.",
    "Sometimes the simplest option turns out to be the one you stick with, so keep that in mind.",
    "I can also suggest a few resources if you'd like to read more about it.",
    "Balancing this with everything else going on can be tricky, so pacing yourself makes sense.",
    "It might help to set a reminder so this doesn't slip through the cracks.",
    "Feel free to share more details and I'll tailor the suggestions.",
    "Talking it over with someone you trust can also bring up ideas you hadn't considered.",
    "Good luck with it, and don't hesitate to ask if something comes up.",
    "You could also try a small experiment first and decide based on how it goes.",
    "In my experience, people who plan a little ahead tend to enjoy the process a lot more.",
    "That kind of detail is worth remembering, and it helps me give you better suggestions later on.",
    "If you're unsure, it's fine to take a day or two before deciding anything.",
    "I'd keep expectations realistic at first and build from there.",
    "It's completely normal to feel a mix of excitement and nerves about something like this.",
    "A bit of structure can go a long way, but leave room for flexibility too.",
    "If you want a second opinion on any of it, just ask.",
    "That's a good example of why it pays to keep notes on what works for you.",
    "Try not to compare your progress too much with other people's; everyone starts somewhere different.",
    "I can draft something more detailed if you tell me what format you prefer.",
    "Keep in mind that the first attempt is rarely the best one, and that's fine.",
    "It might also be worth checking what others in a similar situation have done.",
    "Let's revisit this whenever it becomes relevant again.",
    "Whatever you decide, having thought it through carefully will make it easier.",
    "Honestly, it sounds like you're handling it well.",
    "If time is tight, focus on the one or two things that make the biggest difference.",
)
