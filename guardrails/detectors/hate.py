"""Hate: slurs, and groups of people dehumanised, threatened or generalised about.

A slur or a call to violence against a group is decisive at any sensitivity; a sweeping
negative generalisation ("women are inferior") or "I hate <group>" only from medium up; a
slur that is also an innocent word ("fag" for a cigarette) counts only at high, and never
inside its innocent phrases. Mentioning a group is never evidence: "Muslims fast during
Ramadan" passes, and so does asking about a stereotype ("is it true that ...?").
"""

from __future__ import annotations

import re

from guardrails.detectors.rules import (
    Gate,
    WeightedPattern,
    alternation,
    exempt,
    find,
    fold,
    load_lists,
    rule,
    threshold,
    verdict,
)
from guardrails.engines.base import PASS, Stage, Verdict

_LISTS = load_lists("hate")
GROUP = alternation(_LISTS["group"])
GROUP_ADJ = alternation(_LISTS["group adjective"], plural=False)
DEHUMANISING = alternation(_LISTS["dehumanising"])
CONTEMPT = alternation(_LISTS["contempt"])
STEREOTYPE = alternation(_LISTS["stereotype"])

# "all black people" is a group; "all black pixels" is not: a group noun must not be the
# modifier of another noun.
GROUP_END = (
    r"(?![ \t]+(?!(?:and|or|who|that|because|in|from|to|for|with|of|like|are|is|were|r"
    r"|should|must|need|needs|deserve|don't|do|breed|multiply|control|run|own|belong|would|will"
    r"|could|can|always|never|all|just|have|has|get|go)\b)[a-z])"
)
DET = (
    r"(?:(?:all|most|the|these|those|them|every|every\s+single|fucking|filthy|dirty|damn"
    r"|bloody|stinking)\s+)*"
)
THE_GROUP = rf"{DET}{GROUP}{GROUP_END}"
# Plural for sure, so a following word cannot be the noun it modifies ("Chinese hackers").
PLURAL_GROUP = (
    rf"{DET}(?:{alternation(_LISTS['group'], plural=False)}(?:e?s)"
    rf"|{GROUP_ADJ}\s+(?:people|folks?|men|women))"
)
KILLED = (
    r"die|be\s+killed|be\s+exterminated|be\s+gassed|be\s+shot|be\s+hanged|be\s+hung"
    r"|be\s+lynched|be\s+burned|be\s+burnt|be\s+wiped\s+out|be\s+eradicated|be\s+sterili[sz]ed"
    r"|be\s+put\s+down|not\s+exist|not\s+(?:be\s+allowed\s+to\s+)?breed|not\s+have\s+rights"
)
SENT_AWAY = (
    r"be\s+deported|be\s+removed|be\s+banned|not\s+be\s+allowed|not\s+vote"
    r"|go\s+back\s+(?:to\s+(?:their|africa|mexico|asia|india|china|the\s+jungle|the\s+desert)"
    r"|where\s+they\s+came\s+from)"
)
MUST = r"(?:should|must|need\s+to|needs\s+to|deserve\s+to|ought\s+to|have\s+to)\s+(?:all\s+)?"

RULES: tuple[WeightedPattern, ...] = (
    rule("slur", 1.0, alternation(_LISTS["slur"])),
    rule("hate slogan", 1.0, alternation(_LISTS["slogan"], plural=False)),
    rule("ambiguous slur", 0.6, alternation(_LISTS["ambiguous"])),
    rule(
        "dehumanising a group",
        1.0,
        rf"{THE_GROUP}\s+(?:are|r|is)\s+(?:(?:nothing\s+but|just|like|no\s+better\s+than|all"
        r"|basically|literally|simply|worse\s+than|a\s+bunch\s+of|a\s+pack\s+of|filthy|dirty"
        rf"|disgusting|such)\s+)*(?:an?\s+)?{DEHUMANISING}",
    ),
    rule("dehumanising a group", 1.0, rf"{GROUP_ADJ}\s+{CONTEMPT}"),
    rule(
        "dehumanising a group",
        1.0,
        rf"{THE_GROUP}\s+(?:breed|multiply)\s+like\s+(?:rats|rabbits|animals|cockroaches|vermin)",
    ),
    rule(
        "dehumanising a group",
        0.8,
        rf"(?:infested|overrun|swarming|flooded)\s+(?:with|by)\s+{THE_GROUP}",
    ),
    rule(
        "dehumanising a group",
        0.6,
        rf"(?:those|these|such)\s+people\s+are\s+(?:(?:just|all|like|nothing\s+but)\s+)*{DEHUMANISING}",
    ),
    rule(
        "violence against a group",
        1.0,
        r"(?:kill|murder|exterminate|gas|lynch|hang|shoot|burn|slaughter|eradicate|wipe\s+out"
        rf"|annihilate|cleanse|purge)\s+{THE_GROUP}|death\s+to\s+{THE_GROUP}"
        rf"|{THE_GROUP}\s+{MUST}(?:{KILLED})"
        rf"|{THE_GROUP}\s+(?:don't|do\s+not)\s+deserve\s+(?:to\s+live|to\s+exist|rights"
        r"|human\s+rights|respect)",
    ),
    rule(
        "violence against a group",
        0.9,
        r"(?:burn|bomb|blow\s+up|torch|firebomb)\s+(?:down\s+)?(?:the|a|every|all|their|that)\s+"
        r"(?:mosques?|synagogues?|churches|temples?|gurdwaras?)",
    ),
    rule(
        "violence against a group",
        1.0,
        r"only\s+good\s+[a-z]+\s+is\s+an?\s+dead"
        rf"|(?:wish|hope|want)\s+(?:that\s+)?{THE_GROUP}\s+(?:would|will|to|could)\s+(?:all\s+)?"
        r"(?:die|disappear|burn|be\s+killed|get\s+killed|go\s+extinct|be\s+wiped\s+out|drop\s+dead)",
    ),
    rule(
        "exclusion of a group",
        0.8,
        rf"(?:get\s+rid\s+of|round\s+up|deport|ban)\s+(?:all\s+)?{THE_GROUP}"
        rf"|{THE_GROUP}\s+{MUST}(?:{SENT_AWAY})",
    ),
    rule(
        "exclusion of a group",
        0.8,
        r"send\s+(?:them|these\s+people|those\s+people)\s+(?:all\s+)?back\s+to\s+(?:africa|mexico"
        r"|asia|india|china|their\s+(?:own\s+)?(?:country|countries)|where\s+they\s+came\s+from"
        r"|the\s+(?:jungle|desert))",
    ),
    rule(
        "generalisation about a group",
        0.8,
        rf"{THE_GROUP}\s+(?:are|r)\s+(?:(?:all|so|naturally|genetically|inherently|just"
        rf"|basically|always|born|simply|mostly|nothing\s+but)\s+)*{STEREOTYPE}"
        rf"|{THE_GROUP}\s+(?:are\s+)?(?:ruin|destroy|poison|pollut|invad|tak(?:e|ing)\s+over"
        r"|replac)\w*\s+(?:our|this|the)\s+(?:country|society|nation|culture|race|world"
        rf"|neighbou?rhoods?|jobs)|{THE_GROUP}\s+(?:control|run|own)\s+(?:the\s+)?(?:media"
        r"|banks|world|government|hollywood|money)",
    ),
    rule(
        "generalisation about a group",
        0.8,
        rf"{PLURAL_GROUP}\s+(?:[a-z']+\s+){{1,4}}and\s+(?:are|r)\s+{STEREOTYPE}"
        rf"|{THE_GROUP}\s+(?:belong|should\s+(?:stay|be\s+kept))\s+(?:in\s+(?:the\s+)?(?:kitchen"
        r"|cages?|zoos?|chains|fields|camps|prisons?|jail|ghettos?)|barefoot)",
    ),
    rule(
        "generalisation about a group",
        0.8,
        rf"{THE_GROUP}\s+(?:are|r)\s+(?:too|not)\s+(?:emotional|stupid|weak|dumb|primitive|lazy"
        r"|violent|irrational|hysterical|(?:smart|intelligent|capable|civili[sz]ed|human)\s+enough"
        rf"|fit)\s+(?:to|for)|{THE_GROUP}\s+(?:are|is)\s+behind\s+(?:every|all|each)\s+",
    ),
    rule(
        "hatred of a group",
        0.8,
        rf"(?:hate|despise|loathe|can't\s+stand)\s+{THE_GROUP}",
    ),
)

GATE = Gate(
    _LISTS["group"]
    + _LISTS["group adjective"]
    + _LISTS["slur"]
    + _LISTS["ambiguous"]
    + _LISTS["slogan"]
    + _LISTS["dehumanising"]
    + ("send", "dead", "mosque", "synagogue", "church", "temple", "gurdwara")
)

# Innocent phrases that contain an ambiguous slur.
INNOCENT = re.compile(
    r"chink\s+(?:in|of)\s+(?:the\s+|his\s+|her\s+|their\s+|its\s+|our\s+|my\s+|your\s+)?"
    r"(?:armou?r|light)|fag\s+(?:break|end|ends|packet|butt)|coon\s*hounds?|van\s+dyke"
    r"|dykes?\s+(?:road|street|lane|and\s+dams?)|tranny\s+(?:fluid|oil|cooler|rebuild|swap)"
    r"|squaw\s+valley|spic\s+and\s+span|redskins?\s+(?:potato|peanut)"
)
# A generalisation that is being asked about, reported or refuted, not asserted.
REPORTED = re.compile(
    r"(?:myth|stereotype|misconception|claim|notion|trope|idea|belief|lie|prejudice)s?"
    r"\s+(?:that|of)\s+[^.!?]{0,80}"
    r"|(?:is\s+it\s+true|why\s+do\s+(?:some\s+)?people\s+(?:say|think|believe)"
    r"|it'?s\s+(?:false|untrue|racist|sexist|wrong)\s+to\s+say)\s+(?:that\s+)?[^.!?]{0,80}"
)
_REPORTABLE = frozenset({"generalisation about a group"})


class HateDetector:
    """Blocks hate speech; `sensitivity` ("low", "medium", "high") sets how much it takes."""

    def __init__(self, sensitivity: str = "high") -> None:
        self.sensitivity = sensitivity
        self.threshold = threshold(sensitivity)

    def check(self, text: str, stage: Stage) -> Verdict:
        folded = fold(text)
        if not GATE.opens(folded.text):
            return PASS
        hits = exempt(find(RULES, folded.text), INNOCENT, folded.text)
        hits = exempt(hits, REPORTED, folded.text, _REPORTABLE)
        return verdict(folded.restore(hits), self.threshold, "hate", "hate word list")
