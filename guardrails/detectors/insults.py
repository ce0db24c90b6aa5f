"""Insults: abuse aimed at the reader or at a person, weighted by how directly it is aimed.

"You are an idiot" and "go kill yourself" are decisive at any sensitivity; "what a stupid
bot" or "my manager is a moron" (a person insulted in passing) only at high; an insulting
word alone ("idiot-proof") never. Adjectives only count when aimed at a person, so "this
bug is stupid to debug" passes, and self-deprecation ("I feel like an idiot") is exempt.
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

_LISTS = load_lists("insults")
STRONG = alternation(_LISTS["strong"])
WEAK = alternation(_LISTS["weak"])
STRONG_ADJ = alternation(_LISTS["adjective"], plural=False)
ADJ = alternation(_LISTS["adjective"] + _LISTS["descriptive"], plural=False)
PERSON = alternation(_LISTS["person"])
_COMPOUND = alternation(_LISTS["compound"])

YOU = r"(?:you|u|ya)"
YOU_ARE = (
    r"(?:you(?:'re|re|\s+are|\s+r|\s+were)|u\s+(?:r|are)|ur|y'?all\s+are"
    r"|you\s+(?:guys|people|lot|all|two)\s+are)(?:\s+(?:being|acting\s+like))?"
)
# What may sit between "you are" and the noun: "you're such a total, utter idiot".
QUAL = (
    r"(?:,?\s+(?:such|a|an|the|total|complete|absolute|utter|real|proper|fucking|fuckin"
    r"|bloody|damn|little|big|fat|old|so|just|truly|really|nothing\s+but|bunch\s+of"
    rf"|pack\s+of|{ADJ}))*"
)
ADV = r"(?:\s+(?:so|such|really|truly|completely|utterly|totally|fucking|just|very|too"
ADV += r"|absolutely|incredibly|beyond|the\s+most))*"
# A weak noun must end the phrase ("you're a joke!"), or be followed by a small word
# ("a failure at this"); "you are a pig farmer" is not an insult.
WEAK_END = (
    r"(?![ \t]+(?!(?:and|or|but|who|that|as|for|of|to|with|in|at|on|if|like|because)\b)[a-z])"
)
# "Ignorant of the law" and "thick-skinned" are not insults.
ADJ_END = r"(?!-|\s+(?:of|about)\b)"
PERSON_NOT_COMPOUND = rf"{PERSON}(?![\s-]+{_COMPOUND}(?![a-z]))"
SUBJECT = rf"(?:{PERSON}|he|she|they|him|her|them)"
BE = r"(?:'s|'re|\s+is|\s+are|\s+was|\s+were|\s+seems?\s+like|\s+acts?\s+like)"

RULES: tuple[WeightedPattern, ...] = (
    # Aimed at the reader; the plainest are decisive at any sensitivity.
    rule("insult aimed at the reader", 1.0, rf"{YOU_ARE}{QUAL}\s+{STRONG}"),
    rule("insult aimed at the reader", 1.0, rf"{YOU}{QUAL},?\s+{STRONG}"),
    rule("insult aimed at the reader", 0.9, rf"{YOU_ARE}{QUAL}\s+{WEAK}{WEAK_END}"),
    rule("insult aimed at the reader", 0.8, rf"{YOU}{QUAL},?\s+{WEAK}(?=\s*(?:[!.,?;:]|$))"),
    rule("insult aimed at the reader", 0.9, rf"{YOU_ARE}{ADV}\s+{ADJ}{ADJ_END}"),
    rule(
        "insult aimed at the reader",
        0.8,
        rf"are\s+{YOU}\s+(?:(?:really|actually|just|always|this|that|so)\s+)*(?:an?\s+)?"
        rf"(?:{STRONG}|{ADJ}{ADJ_END})",
    ),
    rule(
        "insult aimed at the reader",
        0.9,
        rf"{YOU_ARE}\s+(?:even\s+)?(?:dumber|stupider|uglier|thicker|more\s+(?:useless|stupid"
        r"|pathetic|incompetent|annoying|clueless))\s+than"
        rf"|{YOU_ARE}\s+(?:by\s+far\s+)?the\s+(?:worst|dumbest|stupidest|most\s+(?:useless"
        r"|incompetent|pathetic|annoying|clueless))(?![a-z-])",
    ),
    rule(
        "insult aimed at the reader",
        0.9,
        rf"(?:stop|quit)\s+being\s+(?:so\s+|such\s+)?(?:an?\s+)?{QUAL}\s*(?:{STRONG}|{WEAK}|{ADJ})",
    ),
    rule(
        "insult aimed at the reader",
        0.7,
        rf"(?:don't|dont|do\s+not)\s+be\s+(?:such\s+|so\s+)?(?:an?\s+)?{QUAL}\s*{STRONG}",
    ),
    rule("insult aimed at the reader", 0.9, rf"[,;:]\s*{QUAL}\s*{STRONG}(?=\s*(?:[!.?]|$))", False),
    rule("insult aimed at the reader", 0.6, rf"[,;:]\s*{WEAK}(?=\s*[!.?]*\s*$)", False),
    rule(
        "insult aimed at the reader",
        0.9,
        rf"how\s+(?:{ADJ}\s+(?:are|can)\s+{YOU}|can\s+{YOU}\s+be\s+(?:so\s+)?{ADJ})",
    ),
    rule(
        "insult aimed at the reader",
        0.9,
        rf"{YOU}\s+have\s+the\s+(?:iq|brains?|intelligence|memory)\s+of\s+an?",
    ),
    rule("insult aimed at the reader", 0.7, rf"{YOU}\s+(?:suck|stink)"),
    rule("insult aimed at the reader", 0.7, rf"(?:^|[.!?]\s*){STRONG}\s*[!,]", False),
    rule(
        "insult aimed at the reader",
        0.8,
        rf"(?:nobody|no\s+one)\s+(?:likes|loves|wants|cares\s+about)\s+{YOU}"
        rf"|everyone\s+hates\s+{YOU}",
    ),
    rule(
        "insult aimed at the reader",
        0.9,
        rf"what\s+(?:an?\s+)?{QUAL}\s*(?:{STRONG}|{WEAK})\s+{YOU}\s+(?:are|r)",
    ),
    rule(
        "insult aimed at the reader",
        0.6,
        rf"(?:smarter|brighter|more\s+intelligent)\s+(?:\w+\s+){{0,2}}than\s+{YOU}"
        r"(?!'d|\s+(?:might|may|would|think|expect|imagine|reali[sz]e|know))",
    ),
    # Abuse and wishes of harm.
    rule(
        "directed obscenity",
        0.9,
        rf"(?:fuck|screw)\s+{YOU}|(?:fuck|piss|bugger|sod)\s+off|eat\s+shit|up\s+yours"
        r"|suck\s+my\s+(?:dick|cock|balls)|kiss\s+my\s+ass|stfu|shut\s+the\s+fuck\s+up",
    ),
    rule("directed obscenity", 0.6, r"go\s+to\s+hell"),
    rule("telling someone to shut up", 0.3, r"shut\s+up"),
    rule("telling someone to go away", 0.3, r"get\s+lost|go\s+away"),
    rule(
        "encouraging self-harm",
        1.0,
        rf"go\s+(?:and\s+)?(?:kill|hang|shoot|drown|off)\s+(?:yourself|urself|yourselves)|kys"
        rf"|(?:i\s+)?hope\s+{YOU}\s+(?:die|rot|get\s+cancer|burn\s+in\s+hell)"
        rf"|(?:world|everyone)\s+(?:would\s+be|is)\s+better\s+off\s+without\s+{YOU}"
        rf"|nobody\s+would\s+(?:miss|care\s+if)\s+{YOU}"
        r"|do\s+(?:us|everyone|the\s+world)\s+(?:all\s+)?a\s+favou?r\s+and\s+(?:die|kill)",
    ),
    rule("encouraging self-harm", 0.7, r"(?:kill|hang)\s+(?:yourself|urself)|drop\s+dead"),
    rule(
        "wishing harm",
        0.7,
        rf"hope\s+{YOU}\s+(?:get\s+(?:fired|sacked|hit|run\s+over)|lose\s+your\s+job|suffer"
        r"|choke|fail)",
    ),
    # A person insulted in passing: high sensitivity only.
    rule(
        "insulting a person",
        0.6,
        rf"{STRONG_ADJ}\s+(?:little\s+|old\s+|fat\s+)?{PERSON_NOT_COMPOUND}",
    ),
    rule("insulting a person", 0.6, rf"{SUBJECT}{BE}{QUAL}\s+{STRONG}"),
    rule("insulting a person", 0.6, rf"what\s+(?:an?\s+)?(?:{QUAL}\s+)?{STRONG}"),
    rule("insulting a person", 0.6, rf"{STRONG_ADJ}\s+{STRONG}"),
    rule(
        "insulting a person",
        0.6,
        rf"only\s+(?:an?\s+)?{QUAL}\s*{STRONG}\s+would|what\s+kind\s+of\s+{QUAL}\s*{STRONG}",
    ),
    # An insulting word alone: evidence, never enough by itself.
    rule("insulting word", 0.4, STRONG),
)

GATE = Gate(
    _LISTS["strong"]
    + _LISTS["weak"]
    + _LISTS["adjective"]
    + _LISTS["descriptive"]
    # The words of the rules that need no listed insult: "you suck", "kys", "get lost".
    + ("dumber", "stupider", "uglier", "thicker", "worst", "dumbest", "stupidest", "smarter")
    + ("brighter", "intelligent", "iq", "brain", "brains", "intelligence", "memory", "suck")
    + ("stink", "likes", "loves", "wants", "cares", "hates", "fuck", "screw", "piss", "bugger")
    + ("sod", "shit", "yours", "kiss", "stfu", "shut", "hell", "kys", "yourself", "urself")
    + ("yourselves", "dead", "hope", "better", "nobody", "favour", "favor", "lost", "away")
)

# Passages where an insulting word is not an insult of anyone else.
EXEMPTIONS = re.compile(
    # Self-deprecation: "I feel like an idiot", "made me look stupid", "what an idiot I was".
    r"(?<![a-z])(?:i(?:'m|m|\s+am|\s+was|\s+feel|\s+felt|\s+look|\s+looked|\s+seem|\s+sound"
    r"|\s+must\s+(?:be|look|seem)|'ve\s+been|\s+have\s+been|\s+acted|\s+behaved)"
    r"|makes?\s+me\s+(?:feel|look|seem|sound)|made\s+me\s+(?:feel|look|seem|sound)"
    r"|call(?:ed|ing)?\s+myself|me(?=\s+an?\s))"
    rf"(?:\s+like)?{QUAL}\s+(?:{STRONG}|{WEAK}|{ADJ})"
    rf"|(?:{STRONG}|{WEAK})\s+(?:that\s+)?i\s+(?:am|was)(?![a-z])"
    # Idioms: "don't kill yourself over it", "drop-dead gorgeous".
    r"|(?:don't|dont|do\s+not|no\s+need\s+to|not\s+going\s+to)\s+kill\s+yourself"
    r"|drop[\s-]dead\s+(?:gorgeous|date|deadline)"
)


class InsultsDetector:
    """Blocks insults; `sensitivity` ("low", "medium", "high") sets how much it takes."""

    def __init__(self, sensitivity: str = "medium") -> None:
        self.sensitivity = sensitivity
        self.threshold = threshold(sensitivity)

    def check(self, text: str, stage: Stage) -> Verdict:
        folded = fold(text)
        if not GATE.opens(folded.text):
            return PASS
        hits = exempt(find(RULES, folded.text), EXEMPTIONS, folded.text)
        return verdict(folded.restore(hits), self.threshold, "insult", "insults word list")
