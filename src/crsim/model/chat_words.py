"""Ordinary words of recommendation chat (written by scripts/build_chat_words.py; do not edit).

The words written in at least 5 of the ReDial test dialogues (ReDial, CC BY 4.0:
https://redialdata.github.io/website/), movie mentions removed. The item linker reads a one-word
title made of one of them as easy to hit by accident (`crsim.model.linking`)."""

_TEXT = """
    able about absolute absolutely acting action actor actors actress actually adam adan add
    adventure after afternoon again age ages agian ago agree ah ahhh all almost alone along already
    alright also although always am amazing american an and animated animation another any anything
    anytime anyway anyways appears appreciate appreciated are arent around as ask asking at avengers
    awards away awesome awhile back bad based basically batman be beat beautiful because been before
    being believe ben best bet better between big bill bit black bob body bond book books bored
    boring both boy boyfriend brad brother bruce buddy budget bullock bunch but by bye call called
    came campy can cant care carrey case cast catch caught certainly chance character characters
    chat chatting check checking cheesy child childhood children choice choices choose chris
    christmas christopher classic classics close come comedic comedies comedy comes comic coming
    coms concept consider conversation cool could couldnt couple course crazy creepy cried crime
    cruise cry cute dad dang dark darker date daughter day days dc dead deadpool decade decent
    definately definitely denzel depp dicaprio did didnt die dies different directed director
    disappointed disney do documentaries documentary does doesnt doing done dont down drama dramas
    dramatic drew during dwayne each early easy eat edge either elf else end ending enjoy enjoyed
    enough entertaining epic era especially even evening ever every everybody everyone everything
    exactly example excellent except excited exciting expected extremely fall familiar family famous
    fan fantastic fantasy far fav fave faves favorite favorites favourite feel feeling felt female
    ferrell few fi fiction fight film films finally find finding fine finished first flick flicks
    follow for foreign forever forget forgot forward found franchise freaky frickin friend friendly
    friends from full fun funnier funny game gangster gave gay gender general genre genres get gets
    getting girl girls give glad go god goes going gone gonna goo good goodbye goodie goodnight
    goofy gore gory got gotta gotten graphics great greetings grew gt guess guy guys ha had hah haha
    hahah hahaha hanks happy hard has hasnt hated have havent having he head hear heard hearing
    heart hehe heist hello help helped helpful helping helps her here hero heroes hes hey hi high
    highly hilarious him his historical hitchcock hm hmm hmmm hold holiday home honest honestly hoot
    hope hopefully hoping horrible horror horrors hot hour house how howdy however hows huge hugh
    humor husband id idea ideas if ill im in indeed indie infinity inside inspired intense interest
    interested interesting into is isnt it its ive jack jackman james japanese jean jerker jim jlo
    job john johnny johnson julia june just keep kept kevin kid kids killer kind kinda kinds king
    know known knows last lately later laugh laughed laughing laughs least leave leo leonardo let
    lets life light like liked likes line lines list little live lol long look looked looking looks
    lot lots loud love loved loves low luck made main make makes making man many marathon marvel
    matter matthew may maybe mccarthy me mean meaning meant meet mel melissa men mention mentioned
    middle might mind mine missed mix mob modern moment moments mood moovie more morning most mostly
    mother move movie movies much murder murray music musical musicals must my myself mystery name
    need neither nephew netflix never new newer next nice night nigth no nolan nope nostalgic not
    nothing now np obsessed obviously of off oh ohh ok okay okey old older oldie omg on once one
    ones only ooh oooh open opinion option options or original oscar other others otherwise ou our
    out over overall own packed panther parents part particular particularly parts past people
    perfect perhaps person personal personally pick picks picky pitt place plan plans play played
    playing plays please pleasure plot plus point popcorn popular prefer preferred pretty previews
    prime probably problem psychological put putting queue quite quot re read ready real really
    reason recall reccomend reccomendations recent recently recomendations recommend recommendation
    recommendations recommended recommending regret related released remake remember reminded
    reminding reminds rest reviews rewatch rewatched reynolds right ring robert roberts robot rock
    role rom romance romantic ryan sad said same sandler sandlers sandra saw say says scared scares
    scary scene scenes school sci science seat sec second see seeing seem seemed seems seen sense
    sequel sequels series serious seriously set several shall share she shes shot should show silly
    similar since singing sister slasher small smart smile smith so solid some someone something
    sometimes son songs soo soon sooo sorry sort sorts sound sounds soundtrack space speaking
    special sports star starring stars start stephen steve steven still stoner stop stopping stories
    story stuck stuff stupid style such sugestion suggest suggesting suggestion suggestions summer
    super superhero supposed sure surprised surprisingly suspense suspenseful sweet take talk
    talking taste tastes tear tell telling tend terrible terrific than thank thanks thas that thats
    the theater theaters their them theme then there theres these they theyre thing things think
    thinking third this tho those though thought three thriller thrillers through time times tip
    tipe tired title to today together told tom tomorrow ton tonight too took tooo top totally
    trailer tried trilogy trip true try trying turn tv twice twist two ty type types under
    understand unless until up use used usually various version very vibe viewing violence visiting
    wait waiting wanna want wanted wanting war wars was wasnt watch watched watching way we week
    weekend weird welcom welcome well went were westerns what whatever whats when where which while
    who whole why will willis wish with without woman won wonder wonderful wont work works world
    worries worth would wouldnt wow wrong ya yea yeah year years yep yes yess yesss yesterday yet yo
    you youd youll young younger your youre yours yourself youve yw zombie
"""

#: Lower-case words, letters only.
CHAT_WORDS = frozenset(_TEXT.split())
