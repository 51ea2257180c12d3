"""Ordinary words of recommendation chat (written by scripts/build_chat_words.py; do not edit).

The words written in at least 5 of the ReDial test dialogues (ReDial, CC BY 4.0:
https://redialdata.github.io/website/), movie mentions removed, and the words of at least
3 plots of crsim's movie catalogue. The item linker reads a one-word title made of
one of them as easy to hit by accident (`crsim.model.linking`)."""

_TEXT = """
    aaron abandoned abducted abilities ability able aboard aboriginal about above absolute
    absolutely abuse abused abusive academy accept accepted accepts accident accidental accidentally
    accompanies accompany accomplished according account accountant accused accuses ace achieve
    acquire across act acting action activist activists activities actor actors actress acts
    actually ad adam adan adapt adaptation add addicted addiction adjusting admiral admitted
    adolescent adolf adopt adopted adoptive adopts adult adulthood adults advanced advantage
    adventure adventurer adventures advertising advice advisor affable affair affect affected
    affection affections affluent afghanistan afraid africa african after afterlife aftermath
    afternoon again against age aged agency agenda agent agents ages aggressive agian aging ago
    agree agreeing agrees ah ahead ahhh aid aided aimless air airline airport al alabama alan alaska
    albert alcatraz alcoholic alcoholism alex ali alice alien aliens alike alive all alliance allied
    allies allowing allows ally almost alone along alongside alpha already alright also alter
    altered altering alternate although always am amateur amazing amazon ambassador ambition
    ambitions ambitious america american americans americas amid amnesia among amongst amsterdam
    amusement an anakin analyst ancestor ancestral ancient and andes angel angeles angels anger
    angry animal animals animated animation anna annie annual anonymous anonymously another answer
    answers ant antarctica anthropomorphic anti anticipated any anyone anything anytime anyway
    anyways apart apartment apes apocalypse apocalyptic apollo apparently appear appearance appears
    apply appointed appreciate appreciated apprentice approaches approaching april arch
    archaeological architect are area arent arise aristocrat arizona arm armed arms army around
    arranged arranges arrest arrested arrival arrive arrived arrives arrogant art arthur artificial
    artist artistic artists arts as aside ask asked asking asks aspires aspiring assailants assassin
    assassinate assassinating assassination assassins assemble assembles assigned assignment assist
    assistant associates assorted assume assumes astronaut astronauts at athlete athletes atlanta
    atomic attack attacked attacks attempt attempting attempts attend attending attention attic
    attitude attorney attraction attractive aunt aunts austin australia australian author
    authorities authority autobots automobile avenge avenger avengers average aviator avoid avoiding
    await awakening awakens awards away awesome awhile awkward awry babe baby babysitter bachelor
    back backgrounds bad badlands badly bag baker balance balboa ballet baltimore ban band bandit
    bandits bands bank banker banks banned banner bar barely bargain bargained barry bars bartender
    base baseball based basement basically basketball batman battle battles bay be beach bear beast
    beasts beat beaten beatles beatrice beau beautiful beauty became because become becomes becoming
    bed bee been before befriending befriends began begin beginning begins behavior behind being
    beings beliefs believe believed believes bell beloved ben beneath benefactor benjamin bennet
    bent berlin bernard best bet betrayal betrayed better between beverly beyond biblical big bigger
    biggest biker bilbo bill billionaire billy bio biographical biography biological biologist
    biopic birds birth birthday bishop bit bitten bitter bizarre black blacklisted blade blair bleak
    blind blissfully block blonde blood bloodthirsty bloom blossoms blow blows blue board boarded
    boarding boat bob bodies body bomb bomber bombing bond bonds book books booze border bored
    boring born boss bosses boston botched both bottom bouncer bound bounty box boxer boxing boy
    boyfriend boyfriends boys brad brain brainwashed brash bravery brazilian break breaking breaks
    breed brian bride bridge bridges bridget brilliant bring bringing brings britain british
    broadcast broadway broken broker brooklyn brooks brother brothers brought brown bruce bruno
    brutal brutalized brutally bryan buddies buddy budget bugs build building built bullied bullock
    bumbling bunch bunker burgeoning burglar buried burned burt bus business businessman but butler
    buy buys by bye cab cabin cable california californias call callahan called calling calls came
    camelot camera cameras camp campaign camping camps campus campy can canada canadian cancer
    candidate canine cannibal cannot cant captain captive captivity captor captors capture captured
    captures car card care career careers carl carolina carrey carry carrying cars cartel carter
    cartoonist case casey cash casino casinos cast castle cat catastrophe catastrophic catch catches
    catholic cattle caught cause caused causes causing cave celebrated celebrities celebrity cell
    center centered centering central centuries century ceo certainly chain chainsaw challenge
    challenged challenges challenging champ champion championship championships chance chances
    change changed changes changing chaos chaotic character characters charge charged charity
    charles charlie charlotte charming charts chase chased chases chat chatting chauffeur cheating
    check checking checks cheerleader cheesy chef chemical chicago chief child childhood childless
    children childrens childs china chinese chocolate choice choices choose chorus chosen chris
    christ christian christmas christopher chronicle chronicles chuck chucky church cia cindy circle
    circumstances circus citizens city citys civil civilization claim claimed claiming claims clan
    clandestine clash class classic classics classmate classmates claus clean clear clerk cleveland
    client clients climate climber clint clock clone close closed closer closest closure clouseau
    clown club clue clues clumsy clutches co coach coaches coaching coast cocaine cocky code coffin
    col cold collapse collar colleague colleagues collect collection college collide collins
    collision colonel colony colorado colorful colossal coma comatose combat combatants come
    comedian comedians comedic comedies comedy comes comic coming command commander commanding
    commit commitment committed committing common communicate communist community companion
    companions company compete competing competition competitive competitor complete completely
    complex complicated complications composer compulsive computer comrades coms con concept concert
    condition conditions conducts coney confidence confinement conflict confront confronted
    confronts congressman conman connect connected connection connor conquering conscience
    consequences conservative consider conspiracy conspire construction consultant contact contain
    containing contemporary contend contest continue continues continuing contract contracts control
    controlled controlling controversial convention conversation convict convicted convicts convince
    convinced convincing cook cool cop cope cops core corporate corporation corrupt corruption cost
    costume could couldnt council counselor counselors count counter counterpart countries country
    countrys countryside county couple couples courage course court cousin cousins cover covering
    covert cowboy crash crashes crazy create created creates creating creation creator creature
    creatures credit creepy crew cried crime crimes criminal criminals crisis critically crocodile
    croft crook crooked crooks cross crosses crown cruel cruise crumbling crush cry crystal cub
    cuban culprit cult cultural culture cure current currently curse cursed custody cut cute cyber
    cyborg cynical da dad daily damage damaged dame dance dancer dancers dancing dang danger
    dangerous dangers danny daring dark darker darkness darth date dates dating daughter daughters
    dave david day days dc de dea dead deadliest deadly deadpool deaf deal dealer dealers dealing
    deals dean death deaths debbie debonair debt debut decade decades deceased decent decepticons
    decide decides decision decisions dedicated deed deep deeper deeply defeat defend defending
    defends defense definately definitely deformed defy deliberately deliver delivery delves demand
    demanding demands demigod demon demonic demons denmark denzel department dependent depicting
    depp depressed depression depth deranged descend descendant descends desert deserted designed
    designer desire desolate desperate desperately despite destiny destroy destroyed destroying
    destruction destructive detailing details detective detectives detention determine determined
    detroit devastated devastating develop developed developer developing develops device devil
    devils devoted diabolical diagnosed diamond diana dicaprio dictator did didnt die died dies
    differences different difficult dig digital dim dinner dinosaur dinosaurs directed direction
    director dirt dirty disabled disappearance disappeared disappears disappointed disaster
    disasters disastrous discover discovered discovering discovers discovery disease disfigured
    disgraced disgruntled disguise disguised disguises disillusioned disney disorder dispatched
    disrupted distance distant district disturbed disturbing ditch divers divided divorce divorced
    divorcee divorces dj do doc doctor documentaries documentary dodge does doesnt dog dogs doing
    doll dollar dollars domestic dominated domination dominic don done dons dont doom doomed door
    dormant double doubt down dr dracula drag dragged dragon dragons drama dramas dramatic
    dramatization drawn draws dream dreams drebin drew drifter drinking drive driven driver drivers
    drives driving drops drug drugs drummer drunk drunken dry due duke dumb dump dumped dumps duo
    during dusty duty dwarves dwayne dying dynasty dysfunctional dystopian each earlier early earn
    earth earths east eastern eastwood easy eat eating eccentric eddie edge editor edward effect
    effects effort efforts egg ego egyptian eight either el elaborate elderly elected election
    elementary eleven elf eliminate eliminating elise elite elizabeth ella elle ellen elsa else
    elusive elvis embark embarks embarrassing embrace embroiled emerge emergency emerges emily
    emotional emperor empire empires employee employees employer employs en enamored encounter
    encountering encounters end endeavors ending endless ends enemies enemy energy enforcer engage
    engaged engineer england englands english enhanced enjoy enjoyed enjoys enlisted enlists enough
    enroll enrolls enslaved enslaving ensue ensues ensure entangled enter enterprise enters
    entertainer entertaining entire entity environment epic epidemic equally era eradicate erased
    ernest escalates escape escaped escapes escaping escort especially espionage estate esteem
    estranged etc ethan europe european eve even evening event events eventual eventually ever
    everdeen every everybody everyday everyone everything evidence evil evolved ex exact exactly
    examination examining example excellent except exchange excited exciting exclusive execute
    executive executives exhibit exile exiled exist existed existence exists exotic expectations
    expected expecting expedition experience experienced experiences experiencing experiment
    experimental experiments expert exploration explore explorer explorers explores explosive expose
    exposed express extraordinary extraterrestrial extreme extremely eye eyed eyes fabled face faced
    faces facial facility facing fact faction factory faded fading fail failed failing fails failure
    fairies fairy faith fake fall fallen falling falls false falsely fame famed familiar families
    family familys famous fan fanatic fans fantastic fantasy far farm farmer farmers farmhouse
    fascinated fashion fast fat fatal fate fateful father fathers fav fave faves favorite favorites
    favourite fbi fear fearless fears featuring fed federal federation feds feeding feel feeling
    feelings feels feisty fell fellow fellowship felt female fend ferrell feud few fi fiance fiancee
    fiancees fiction fictional fictionalized field fields fierce fiercely fifteen fifth fifty fight
    fighter fighters fighting fights figure figures filled film filmed filmmaker films final finally
    finance financial find finding finds fine finish finished finn fiona fire fired firefighter firm
    first fish fishing fit fitting five fix flamboyant flame flashbacks fledgling flee flesh flick
    flicks flight flighty florida flow fly flying focker focus focuses focusing foes foil folk
    follow followed following follows food foot footage football for forbidden force forced forces
    forcibly forcing ford foreign forest forever forger forget forgive forgot form former formidable
    forming forms formula fortress fortune forty forward foster fought foul found founder fountain
    four fourteen fourth fox fractured framed france franchise francisco frank frankenstein franklin
    fraternity fraud freak freaky fred freddy free freed freedom french frenzy fresh freshman
    frickin friday friend friendly friends friendship frightened frightening frog from front
    frontier frozen frustrated fu fueled fugitive fulfill fulfilling full fun funeral funnier funny
    further future futuristic gain gains galaxy gambler gambling game games gang gangs gangster
    gangsters garden gas gates gather gathers gave gay gender gene general generation generations
    genetically genius genre genres genuine george german germany get getaway gets getting ghetto
    ghost ghostface ghostly ghosts giant gift gifted gigantic girl girlfriend girlfriends girls give
    given gives giving glad global globe glory go goal god gods goes going gold golden golf gone
    gonna goo good goodbye goodie goodnight goofy gore gory got gotham gotta gotten governess
    government grad grade gradually graduate graduation graham grail grand grande grandfather
    grandmother grandson grant granted graphics grave great greatest greece greed greedy greek green
    greetings greg grew grey grief grieving grisly griswold groom ground group groups grow growing
    grown grows gruesome gruff gt guard guarded guardian guardians guards guess guests guidance
    guide guilty gulf gun gunfighter gunmen gunslinger guru guy guys gym ha habits hacker had
    haddonfield hah haha hahah hahaha hair half hall halloween han hand handed hands handsome hank
    hanks hannibal hapless happen happened happens happily happiness happy harassed harbor hard
    hardened hardly harlem harold harrowing harry harvard harvey has hasnt hatches hate hated hates
    hating hatred haunt haunted haunting haunts have haven havent having havoc hawaiian he head
    headed heading heads health hear heard hearing heart hearted heather heaven heavily heavyweight
    hedonistic hehe heights heir heiress heist heists held hell hellish hello help helped helpful
    helping helps henry her hercule here heritage hermione hero heroes heroic heroin herself hes hey
    hi hidden hide hiding high higher highly hijack hijacked hilarious hill hills him himself hip
    hire hired hires his historical history hit hitch hitchcock hitman hits hm hmm hmmm hockey
    hogwarts hold holding holds hole holes holiday holidays holly hollywood holmes holocaust holy
    home homeland homeless homes hometown homeworld homicidal homicide honest honestly honey hong
    honor hood hook hoot hope hopeful hopefully hopeless hopes hoping horde horn horrible horribly
    horrific horrifying horror horrors horse hospital host hostage hostages hostile hot hotel hour
    hours house household houses housewife how howdy however hows huge hugh human humanity humanitys
    humankind humanoid humans humble humiliating humor hundred hundreds hunger hungry hunt hunted
    hunter hunters hunting hunts hurricane husband husbands hustler hybrid hyde ice iconic id idea
    idealistic ideas identical identify identity idol idolizes idyllic if ii iii ill illegal
    illinois im imaginary imagination imagine imagined imf immature immediately immigrant immortal
    immortality implicated important impossible impostor impress imprisoned impromptu improve
    impulsively in inadvertently incarcerated incident incidents including incompetent increasingly
    incredible incredibly indeed independence independent india indian indiana indie industrial
    industrialist industry inept inexperienced inexplicable infamous infant infatuated infected
    infested infiltrate infinity influence informant information inhabitants inhabited inherit
    inheritance inherits injured inmates inn inner innocence innocent insane insects insecure inside
    inspector inspire inspired inspires instantly instead institution instructor insurance
    intellectual intelligence intelligent intended intends intense intent intentions interconnected
    interest interested interesting interference intergalactic intern international internet
    intertwine intertwined intervenes interview interviews intimate into intrigue introduce
    introduces invade invades invading invasion invented invention inventor investigate investigates
    investigating investigation investigator investment investor invincible invisible invitation
    invited involuntarily involve involved involves involving iowa ip iraq ireland irish iron is
    island islands isnt isolated isolation israeli issues it italian italy its itself ive ivy jack
    jackie jackman jacob jail jake james jane janitor japan japanese jason jay jazz jealous jean
    jedi jeff jekyll jeopardy jerker jerry jersey jerusalem jesse jesus jet jewel jewelry jewish
    jigsaw jigsaws jim jimmy jlo job jobs joe joey john johnny johnnys johnson join joining joins
    joint joker jones jordan joseph journalist journey joy jr judge juggles julia july jump june
    jungle jungles junior jupiter juror just justice juvenile kansas kate katie katniss keep keeping
    keeps kelly kennedy kenya kept kermit kersey kevin key kgb khan kick kid kidnap kidnapped
    kidnapper kidnappers kidnapping kidnaps kids kill killed killer killers killing killings kills
    kind kinda kindergarten kindness kinds king kingdom kingpin kirk knew knight knights know
    knowing knowledge known knows knoxville kong korean krueger kung kurt la laced ladder ladies
    lady laid lake land landing lands landscape lane language lapd lara large larger larry las last
    late lately later latest latin laugh laughed laughing laughs launch launches laurie law lawman
    laws lawyer lazy lead leader leaders leadership leading leads league learn learning learns least
    leave leaves leaving lecter led lee left legacy legal legend legendary legends leo leonardo
    leprechaun lesbian less lessons let lethal lets letter letters level lewis liar lie lies
    lieutenant life lifeless lifelong lifestyle lifetime light lightning like liked likes limited
    limits lincoln line liner lines link lion list literally literary little live lives living lloyd
    loan local locals locate location locked logan lol london londons lone lonely long longs
    longtime look looked looking looks loomis looney loop loose loosely lord lords los lose loser
    loses losing loss losses lost lot lots lottery loud louis lovable love loved lover lovers loves
    loving low loyal loyalties loyalty lucas luck lucky luke lured lurking luther luxurious luxury
    machinations machine machines macleod mad madagascar made madman madness mafia magazine maggie
    magic magical magically magician magnate maid maiden mail main maine maintain major make maker
    makes making malcolm male malevolent malfunction malibu mall man manager manhattan manhunt
    manipulative mankind manner mannered mans mansion many map marathon march marcus margaret
    mariachi marijuana marine marines mark marked market marriage married marries marry marrying
    mars marshal marshall martial martin marty marvel mary maryland mask masked mason mass massacre
    massive master mastermind match mate mates mathematician matrix matter matthew maverick max
    maximum may maybe mayhem mayor maze mccarthy mcclane mcfly mcqueen me mean meaning means meant
    meanwhile measures mechanic media medical medieval meek meet meeting meets mega mel melissa
    member members memories memory men menace mental mentally mention mentioned mentor mercenaries
    mercenary merciless mere merlin message messages met mexican mexico mia miami michael michigan
    mid middle midst midwestern might migration mike mild mile military militia mill million
    millionaire millions mind minded minds mine miners mining minions minister minnesota minor
    minute minutes miraculously misadventures misanthropic mischievous miserable misfit misfits
    misguided mismatched miss missed missile missing mission missionary mississippi missouri mistake
    mistaken mistakenly mistress mix mixed mob mobster mobsters model modern modified mogul molly
    mom moment moments moms money monkey monster monsters monstrous montana montgomery month months
    mood moon moovie morals more morning mortal moscow moses most mostly motel mother mothers motion
    motorcycle mount mountain mountains mouse move moved movement moves movie movies moving mowgli
    mr mrs much multi multinational multiple muppet murder murdered murderer murderers murdering
    murderous murders murphy murray murtaugh museum music musical musicals musician musicians must
    mutant mutants mutated mute mutual my myers myself mysterious mysteriously mystery mystic
    mythical naive name named nameless nancy nanny napoleon narcotics narnia nasa nascar nation
    national nations native natives natural nature natured naval navigate navigates navigating navy
    nazi nazis nba near nearby nearly nears nebraska need needed needs nefarious neglected negotiate
    neighbor neighborhood neighbors neither nelson nemesis neo nephew nerdy netflix network neurotic
    nevada never neverland nevertheless new newborn newcomer newer newfound newly newlywed newlyweds
    news newsman newspaper next nice nick niece night nightclub nightmare nightmares nightmarish
    nights nigth nine ninja no noble nobody nolan non none nope nora normal norman north northern
    nosed nostalgic not nothing noticed notices notorious novel novelist now nowhere np nuclear
    number nun nurse nyc obese object objects obnoxious obsessed obsession obsessive obstacles
    obtain obviously occupied occur occurrences occurs ocean oconner octavius october odd oddball
    odds odyssey of off offbeat offer offered offers office officer officers official officials
    often oh ohh ohio oil ok okay okey oklahoma old older oldie oliver olympic olympics omg on once
    one ones online only onto ooh oooh open opening opens opera operating operation operations
    operative operatives operator opinion opportunity opposing oppressive option options or orbiting
    order ordered orders ordinary organisation organization organize organized original origins
    orleans orphan orphanage orphaned oscar ostracized other others otherwise otherworldly ou our
    out outback outcast outcasts outer outlaw outlaws outpost outside over overall overcome
    overcomes overrun overthrow overweight overworked own owned owner owners oz pacific pack packed
    pact paige pain painful painter pair paired pairs pal pals pan panem panther paradise parallel
    paralyzed paranoid paranormal parents paris parisian park parker parlor parody part participate
    particular particularly parties partner partners parts party partying pass passed passenger
    passengers passes passion passionate past pat path paths patient patients patriarch patrol paul
    pay paying pays peace peaceful peasant peculiar pen penguin pennsylvania people peoples perfect
    perfection perform performance performer performing perhaps perilous period perpetrated person
    personal personalities personality personally persons perspective persuades pet peter petty
    phenomenon phil philadelphia philosophy phone photographer physical physician physics picard
    pick picked picks picky pictures piece pig pilot pilots pimp pink pirate pirates pitcher pitt
    pittsburgh pizza place placed places plague plagued plan plane planet planets planned planning
    plans plant plantation plastic platonic platoon play playboy played player players playing plays
    playwright please pleasure plot plots plump plunged plus po poet point points poirot poker polar
    police policeman policemen political politically politician politics pool poor pop popcorn
    popular populated population porn portal portrait portrayed pose poses posh posing position
    posse possessed possession possible possibly post pot potential potentially potter pound poverty
    power powered powerful powers prank pre predator predators prefer preferred pregnant prehistoric
    prejudice prep preparation prepare prepares preparing prequel presence present president
    presidential presidents pressure pressures prestigious presumed pretend pretending pretty
    prevent preventing previews previous previously prey price priceless pride priest priests prime
    prince princess principal prior prison prisoner prisoners private prix prize pro probably
    problem problems proceeds process prodigy producer production professional professor profoundly
    program programmer programming prohibition project prom promise promises promising promptly
    proof property prophecy proposes prospector prostitute protect protected protecting protection
    protector prove proves provide psychiatric psychiatrist psychic psychological psychologist
    psychopath psychopathic psychotic public pull pulled punishment punk puppet puppies purchased
    purge purpose purposes pursue pursued pursues pursuing pursuit push pushed pushes put puts
    putting qualify quarterback queen queens quentin quest question questions queue quick quickly
    quiet quite quot rabbit race racer racers races racial racing radio rag rage rages ragtag raid
    rain raise raised raising rallies rambo rambunctious rampage rampant ranch rancher random range
    ranger ransom rap rape raped rapidly rare rat rated rather ray re reach reaches reaching
    reaction read ready real reality realize realizes realizing really realm reason reasons rebel
    rebellion rebellious rebels rebuilds recall recalls recapture reccomend reccomendations receive
    received receives receiving recent recently reckless reclaim reclusive recomendations recommend
    recommendation recommendations recommended recommending reconcile reconnect record recorded
    recounting recounts recover recruited recruits red redemption reese reflects refuge refugees
    refuses refusing regain regarding region regret regular rehab reign rejected rejects rekindle
    related relationship relationships release released releases relies religious relive relocated
    reluctant reluctantly rely remain remaining remake remember reminded reminding reminds remote
    renegade renovate renowned rent repair repeat repercussions replaced reporter reporters
    representative reputation rescue rescued rescues research researcher researching resentful
    reserve residence resident residents resides resistance resolve resort resorts resourceful
    respect respected respective response responsible rest restaurant restore results resurrected
    retire retired retirement retiring retreat retrieve return returned returning returns reunion
    reunite reunited reunites reveal revealed revealing reveals revelations revenge reverse reviews
    revive revolt revolution revolves reward rewatch rewatched reynolds rich richard rick rid ridden
    ride rider riggs right rights riley ring rio ripley rise rises rising risk risks rival rivalry
    rivals river road rob robber robbers robbery robbing robert roberts robin robinson robot robotic
    robots rock rocked rocky rogue role roles roll rom roman romance romantic rome ron roof rookie
    room roommate rose rough round rounds route routine row roy royal rugby ruin ruined rule ruled
    rules rumored run runaway runner running runs rural russia russian ruthless ryan sabotage sacred
    sacrifice sad sadistic safe safely safety said sail salem salesman sam samantha same samurai san
    sanctuary sandler sandlers sandra sandy sanity santa santas sarah satanic satire saurons save
    saved saves saving savior savvy saw say says scale scam scandal scared scares scary scene scenes
    scheme schemes scheming scholarships school schools schoolteacher sci science scientist
    scientists score scores scotland scott scottish scout scramble screen screenwriter sea seal
    search searches searching season seasoned seat sec secluded second secret secretary secretive
    secretly secrets section secure security seduce seduces seductive see seeing seek seeking seeks
    seem seemed seemingly seems seen sees seize selene self selfish sell semi senator send sending
    sends senior seniors sense senses sensitive sent sentence sentenced separate separated
    separation september sequel sequels sergeant serial series serious seriously serve serves
    service services serving set sets setting settle seven seventeen several severely sex sexual
    sexually sexy sgt shadow shadowy shady shake shakes shakespeares shall shallow shanghai shape
    shaped share shared shares sharing shark sharks shattered shaw she shelter sheltered sheriff
    sherlock shes shifting ship shipment shipped ships shocking shoot shooting shop shopping short
    shortly shot should show shower showing shows shrek shut shuttle shy siblings sick side sidekick
    sides sidney sights significant signs silence silent silly similar simon simple since singer
    singing single singles sinister sinking sir sister sisters site situation situations six size
    skater skating skeptical ski skilled skills skip skull skywalker slacker slasher slave slavery
    slaves sleazy sled sleep sleeping slowly small smart smile smith smooth smuggling sniper
    snobbish snow so soap soccer social socialite socially society solace solar sold soldier
    soldiers sole solid solitary solo solve some somehow someone something sometimes son song songs
    songwriter sons soo soon sooo sophie sorcerer sorority sorry sort sorts sought soul sound sounds
    soundtrack south southern soviet space spacecraft spaceship spain spanish sparks sparrow speak
    speaking special specializes species spectral speed spell spend spending spends spent spider
    spies spirit spirited spirits spiritual spite spoiled spoof sport sports sprawling spreads spree
    spring springs spy squad st staff stage stages stake stakes stalked stalking stalks stand
    standing stands star stardom stark starring stars start starting starts state states station
    stationed statuette status stay staying stays steal stealing steals steel step stephen
    stepmother steve steven still stock stole stolen stone stoner stoners stop stopping store
    stories storm story straight strait stranded strange stranger strangers stray street streets
    streetwise stricken strict strike strikes string strip stripper strives stroke strong struggle
    struggles struggling stuart stubborn stuck student students studio study stuff stumble stumbles
    stuntman stupid style sub subjects submarine subsequent subsequently substance substitute suburb
    suburban suburbs subway success successful successfully successor such sucked sudden suddenly
    suffering suffers sugestion suggest suggesting suggestion suggestions suicide suit summer
    summoned sun super superhero superheroes superior superiors superman supernatural superstar
    supervillain supply support supposed supposedly sure surface surfer surgeon surgery surprise
    surprised surprisingly surreal surrogate surrounded surrounding surveillance survival survive
    survives surviving survivor survivors susan suspect suspected suspects suspense suspenseful
    suspicion suspicious swamp swan swap sweet sweetheart swept swimming sword swordsman sydney
    syndicate system table tables tabloid tag take taken takes taking tale talent talented talents
    tales talk talking tall tank tap tape tapes target targeted targets task tasked taste tastes
    taught teach teacher teachers teaches teaching team teamed teammates teams tear tech techniques
    technology ted teen teenage teenager teenagers teens telekinetic teleportation television tell
    telling tells temper temporary ten tenant tenants tend tennis tensions term terminal terminally
    terms terrible terribly terrific terrifying terror terrorism terrorist terrorists terrorize
    terrorized terrorizing terry test tested tests texas thailand than thank thanks thanksgiving
    thas that thats the theater theaters theatre theft their them theme themed themselves then
    therapist there theres these they theyre theyve thief thieves thing things think thinking thinks
    third thirsty thirteen thirty this tho thomas thor those though thought thousand threat threaten
    threatened threatening threatens three thriller thrillers throne through throughout throw thrown
    throws thug thugs tiger tim time times timid tiny tip tipe tired titanic title to today together
    tokyo told tom tommy tomorrow ton tonight tony too took tooo tooth top toretto torn torture
    total totally tough tour tourist tourists tournament toward towards tower towers town towns
    toxic toy toys track tracking tracks trade trading traditional tragedy tragic trail trailer
    train trained trainee trainer training trains transform transformed transforms transplant
    transport transported trap trapped traumatic traumatized travel traveling travelling travels
    treasure tree trek trial triangle tribe tribes tricked tricks tried tries trigger trilogy trio
    trip tropical trouble troubled troubles truck true trust trusted truth try trying tunnel
    turbulent turf turmoil turn turned turner turning turns turtles tv twelve twenty twice twin
    twins twist twisted two ty tycoon tyler type types typical tyrannical tyranny tyrant ugly uk
    ultimate ultimately ultra unable unaware unbearable unborn uncertain uncharted uncle
    unconventional uncover uncovering uncovers undead under underachiever underachieving undercover
    undergoes underground understand undertake underworld uneasy unemployed unexpected unexpectedly
    unfaithful unfold unfortunately unhappy unimaginable union unique unit unite united universe
    university unknowingly unknown unleash unleashes unless unlikely unravel unscrupulous
    unspeakable unstable unsuspecting until unusual unwittingly up upcoming update upon upper
    uprising upside upstate uptight urban us usa use used uses using uss usual usually vacation
    vacationing vader valley vampire vampires van variety various vast vegas vendetta vengeance
    vengeful venomous venture ventures verge vermont version very vessel vet veteran veterans via
    vibe vicious victim victims victorian victory video vienna vietnam view viewing vigilante
    village villain villains vinci vineyard violence violent virginia virginity virtual virus vision
    visions visit visited visiting visitor visits voice volcano volunteers voorhees vows voyage
    wacky wage wait waiter waiting waitress wake wakes walk walking walks wall wallace walter
    wanders wanna wannabe want wanted wanting wants war ward warehouse warfare warlord warn warren
    warring warrior warriors wars wartime was washed washington wasnt waste wasteland watch watched
    watches watching water watergate waters wave way wayne ways wayward we wealthy weapon weapons
    weather web wed wedding week weekend weeks weird welcom welcome well went were werewolf west
    western westerns whale whales what whatever whats when where whereabouts whether which while
    white who whole whom whos whose why wicked wide widow widowed widower wielding wife wifes wilbur
    wild wilderness will william willing willis wills willy wilson win wind window winds wing
    winning wins winter wise wish wishes witch witchcraft witches with within without witness
    witnessed witnesses witnessing wits witted wives wizard wolf wolverine woman womanizer womans
    women won wonder wonderful wonders wont woods words work worker workers working works world
    worlds worldwide worries worse worst worth would wouldnt wounded wounds wow wrapped wreak
    wrestles wrestling write writer writers writing written wrong wrongfully wrongly wwii wyoming ya
    yakuza yea yeah year years yep yes yess yesss yesterday yet yo york yorker you youd youll young
    younger youngest your youre yours yourself youth youve yw zealand zero zeus zombie zombies zone
    zoo
"""

#: Lower-case words, letters only.
CHAT_WORDS = frozenset(_TEXT.split())
