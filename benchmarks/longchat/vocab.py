"""Vocabularies of the long-conversation generator.

Values of one category are drawn without replacement per persona, so a value names one
thing in a conversation and its question has one answer. Names that are also English words
(May, Will, Rose, Mark, ...) are left out: answers are matched as whole words.
"""

from __future__ import annotations

FEMALE_NAMES = (
    "Ana", "Priya", "Ingrid", "Chiara", "Yuki", "Amara", "Sofia", "Leila", "Marta", "Aoife",
    "Zofia", "Camila", "Noor", "Elif", "Hana", "Freya", "Ines", "Lucia", "Maren", "Nadia",
    "Olga", "Paloma", "Renata", "Saoirse", "Tamsin", "Ulla", "Valeria", "Wanjiru", "Ximena",
    "Yasmin", "Zainab", "Beatriz", "Dagny", "Esme", "Fatima", "Greta", "Helga", "Ilse",
    "Jovana", "Kalinda", "Liesel", "Mireille", "Nkechi", "Orla", "Petra", "Rania", "Siobhan",
    "Thandiwe", "Vesna", "Wiebke", "Adaeze", "Brigitte", "Carmela", "Dorota", "Emilia",
)
MALE_NAMES = (
    "Tomasz", "Kenji", "Mateo", "Olumide", "Rafael", "Anders", "Dmitri", "Emeka", "Farid",
    "Gustavo", "Hiroshi", "Ivan", "Joaquin", "Kwame", "Lorenzo", "Magnus", "Nikolai", "Oskar",
    "Pedro", "Quentin", "Ravi", "Stellan", "Tariq", "Ugo", "Vikram", "Wojciech", "Yusuf",
    "Zoltan", "Bartek", "Cormac", "Desmond", "Eero", "Florin", "Goran", "Henrik", "Idris",
    "Jurgen", "Kofi", "Lars", "Milos", "Nnamdi", "Ossian", "Pavel", "Rustam", "Sandro",
    "Teodor", "Umberto", "Viggo", "Wendell", "Xavi", "Yannick", "Zeno", "Anselm", "Bogdan",
)

CITIES = (
    "Lisbon", "Porto", "Valencia", "Seville", "Bilbao", "Lyon", "Marseille", "Bordeaux",
    "Nantes", "Ghent", "Antwerp", "Utrecht", "Rotterdam", "Leipzig", "Dresden", "Hamburg",
    "Munich", "Salzburg", "Graz", "Ljubljana", "Zagreb", "Krakow", "Gdansk", "Wroclaw", "Brno",
    "Bratislava", "Tallinn", "Riga", "Vilnius", "Helsinki", "Bergen", "Gothenburg", "Aarhus",
    "Edinburgh", "Glasgow", "Cardiff", "Galway", "Bologna", "Turin", "Naples", "Palermo",
    "Thessaloniki", "Plovdiv", "Izmir", "Tbilisi", "Montreal", "Halifax", "Vancouver",
    "Portland", "Denver", "Austin", "Savannah", "Oaxaca", "Medellin", "Valparaiso", "Montevideo",
    "Cusco", "Kyoto", "Osaka", "Sapporo", "Busan", "Taipei", "Hanoi", "Chiang Mai", "Penang",
    "Perth", "Hobart", "Wellington", "Dunedin", "Marrakesh", "Zanzibar", "Cape Town", "Accra",
)
COUNTRIES = (
    "Japan", "Peru", "Iceland", "Portugal", "Vietnam", "Morocco", "Norway", "Chile", "Georgia",
    "Slovenia", "Mexico", "Jordan", "Namibia", "Mongolia", "Sri Lanka", "Croatia", "Scotland",
    "Argentina", "Tanzania", "Laos", "Albania", "Estonia", "Oman", "Bhutan", "Colombia",
    "Costa Rica", "Finland", "Greece", "Ireland", "New Zealand",
)
HERBS = (
    "cilantro", "dill", "tarragon", "fennel", "anise", "rosemary", "sage", "mint", "parsley",
    "oregano", "thyme", "chervil", "lovage", "marjoram", "basil", "caraway",
)
MUSIC = (
    "jazz", "bluegrass", "synthwave", "flamenco", "k-pop", "baroque", "reggae", "techno",
    "bossa nova", "grunge", "afrobeat", "fado", "shoegaze", "motown", "zydeco", "drum and bass",
)
CUISINES = (
    "Ethiopian", "Georgian", "Peruvian", "Sichuan", "Lebanese", "Oaxacan", "Basque",
    "Vietnamese", "Sri Lankan", "Malaysian", "Persian", "Nepalese", "Filipino", "Cajun",
    "Hungarian", "Burmese",
)
SPORTS = (
    "badminton", "water polo", "fencing", "curling", "rugby", "squash", "handball", "lacrosse",
    "table tennis", "volleyball", "ultimate frisbee", "field hockey", "netball", "judo",
)
INSTRUMENTS = (
    "cello", "banjo", "ukulele", "oboe", "accordion", "harp", "trombone", "saxophone",
    "mandolin", "clarinet", "bassoon", "harmonica", "viola", "sitar", "bagpipes",
)
AUTHORS = (
    "Ursula Le Guin", "Haruki Murakami", "Kazuo Ishiguro", "Margaret Atwood", "Terry Pratchett",
    "Jorge Luis Borges", "Toni Morrison", "Italo Calvino", "Octavia Butler", "Jose Saramago",
    "Chimamanda Adichie", "Olga Tokarczuk", "Wislawa Szymborska", "Elena Ferrante",
)
COMPANIES = (
    "Northwind", "Globex", "Initech", "Hooli", "Vandelay Industries", "Stark Logistics",
    "Wayne Analytics", "Acme Robotics", "Tyrell Biotech", "Soylent Foods", "Pied Piper",
    "Cyberdyne", "Gringotts Capital", "Monarch Shipping", "Oscorp Energy", "Wonka Labs",
    "Massive Dynamic", "Aperture Systems", "Meridian Health", "Blue Sun Media",
)
DRINKS = (
    "green tea", "matcha", "espresso", "chai", "yerba mate", "rooibos", "oolong", "cold brew",
    "hot chocolate", "kombucha", "flat white", "earl grey", "turmeric latte", "cortado",
)
CARS = (
    "Volvo XC40", "Subaru Outback", "Skoda Octavia", "Toyota Prius", "Mazda MX-5",
    "Renault Zoe", "Kia Niro", "Fiat Panda", "Nissan Leaf", "Honda Civic", "Tesla Model 3",
    "Peugeot 208", "Hyundai Kona", "Citroen Berlingo",
)
PHONES = (
    "Pixel 8", "iPhone 15", "Galaxy S23", "Fairphone 5", "OnePlus 12", "Moto G", "Xperia 10",
    "Nothing Phone", "iPhone SE", "Galaxy A54",
)
COURSES = (
    "pottery", "woodworking", "welding", "calligraphy", "sourdough baking", "improv",
    "life drawing", "scuba diving", "beekeeping", "bookbinding", "stand-up comedy",
    "glassblowing", "sign language", "salsa dancing", "jewellery making", "upholstery",
)
ROOMS = ("kitchen", "attic", "bathroom", "basement", "garden shed", "balcony", "loft", "porch", "conservatory")
RACES = (
    "Berlin Marathon", "Chicago Marathon", "Ironman Nice", "Comrades Marathon", "Tour du Mont Blanc",
    "Great North Run", "Boston Marathon", "Ride London", "Vasaloppet", "Swimrun Engadin",
)
PARTY_THEMES = (
    "roaring twenties", "disco", "masquerade", "luau", "murder mystery", "Wild West", "pirate",
    "retro arcade", "Hollywood glamour", "medieval banquet",
)
DOG_BREEDS = (
    "beagle", "dachshund", "border collie", "greyhound", "corgi", "whippet", "labrador",
    "shiba inu", "poodle", "spaniel", "schnauzer", "vizsla", "basenji", "samoyed",
)
BANDS = (
    "Radiohead", "Arctic Monkeys", "Khruangbin", "Bon Iver", "Fleetwood Mac", "Massive Attack",
    "Tame Impala", "Portishead", "Fontaines D.C.", "Wet Leg", "Idles",
    "Beach House", "Sigur Ros", "Kraftwerk", "Daft Punk", "Little Simz",
)
BODY_PARTS = ("ankle", "wrist", "knee", "shoulder", "elbow", "collarbone", "thumb", "hamstring")
CONTESTS = (
    "pub quiz", "chili cook-off", "office hackathon", "charity bake sale", "karaoke battle",
    "trivia league", "regatta", "dragon boat race", "robot competition", "spelling bee",
)
BIKE_BRANDS = ("Trek", "Specialized", "Brompton", "Cannondale", "Canyon", "Giant", "Bianchi", "Cervelo", "Orbea", "Ribble")
ARTISTS = (
    "Hokusai", "Frida Kahlo", "Rothko", "Vermeer", "Hilma af Klint", "Basquiat", "Caravaggio",
    "Yayoi Kusama", "Turner", "Klimt", "Magritte", "Hockney",
)
LOST_ITEMS = ("umbrella", "wallet", "sunglasses", "scarf", "headphones", "laptop charger", "library card", "house keys", "thermos")
JOBS = (
    "paramedic", "architect", "sommelier", "pilot", "veterinarian", "carpenter", "midwife",
    "translator", "pharmacist", "firefighter", "geologist", "physiotherapist", "cartographer",
    "florist", "locksmith", "radiographer", "park ranger", "sound engineer",
)
HOBBIES = (
    "rock climbing", "birdwatching", "archery", "kitesurfing", "origami", "knitting",
    "falconry", "geocaching", "fly fishing", "skateboarding", "tai chi", "orienteering",
    "taxidermy", "whittling", "astrophotography", "bonsai",
)
PETS = ("parrot", "tortoise", "ferret", "chinchilla", "hedgehog", "iguana", "rabbit", "axolotl", "gecko", "guinea pig")
WEEKEND_ACTIVITIES = (
    "kayaking", "apple picking", "bouldering", "wine tasting", "paddleboarding", "mountain biking",
    "ice skating", "horse riding", "sailing", "canyoning", "go-karting", "stargazing",
    "foraging", "axe throwing", "snorkelling", "zip lining",
)
VEGETABLES = ("tomato", "courgette", "pepper", "pumpkin", "runner bean", "kale", "aubergine", "pea", "chard", "radish", "beetroot", "leek")
BOOKS = (
    "Middlemarch", "Stoner", "Piranesi", "Rebecca", "Dune", "Circe", "Gilead",
    "Pachinko", "Hamnet", "Rashomon", "Solaris", "Lolita", "Ulysses",
)
DISHES = (
    "paella", "ramen", "moussaka", "shakshuka", "risotto", "pierogi", "bibimbap", "tagine",
    "gnocchi", "laksa", "ceviche", "goulash", "dal", "empanadas", "pho", "biryani",
)
PAINT_COLOURS = ("olive green", "terracotta", "navy blue", "mustard yellow", "dusty pink", "charcoal grey", "teal", "burnt orange")
SERIES = (
    "Severance", "Succession", "Slow Horses", "Fleabag", "Shogun", "Borgen", "Lupin",
    "Ozark", "The Bear", "Mindhunter", "Babylon Berlin",
)

#: Category name -> values. Categories that share a value space share a pool.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "female": FEMALE_NAMES,
    "male": MALE_NAMES,
    "city": CITIES,
    "country": COUNTRIES,
    "herb": HERBS,
    "music": MUSIC,
    "cuisine": CUISINES,
    "sport": SPORTS,
    "instrument": INSTRUMENTS,
    "author": AUTHORS,
    "company": COMPANIES,
    "drink": DRINKS,
    "car": CARS,
    "phone": PHONES,
    "course": COURSES,
    "room": ROOMS,
    "race": RACES,
    "theme": PARTY_THEMES,
    "breed": DOG_BREEDS,
    "band": BANDS,
    "body": BODY_PARTS,
    "contest": CONTESTS,
    "bike": BIKE_BRANDS,
    "artist": ARTISTS,
    "lost": LOST_ITEMS,
    "job": JOBS,
    "hobby": HOBBIES,
    "pet": PETS,
    "activity": WEEKEND_ACTIVITIES,
    "vegetable": VEGETABLES,
    "book": BOOKS,
    "dish": DISHES,
    "colour": PAINT_COLOURS,
    "series": SERIES,
}
