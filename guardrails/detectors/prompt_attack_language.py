"""The language of prompt attacks, matched on folded text: overriding the instructions,
jailbreak role-play, extracting the system prompt, and weak signals that add up."""

from __future__ import annotations

from guardrails.detectors.rules import WeightedPattern, rule

IGNORE = (
    r"(?:ignore|disregard|forget|bypass|skip|discard|abandon|dismiss|throw\s+away|set\s+aside"
    r"|stop\s+following|do\s+not\s+follow|don't\s+follow|never\s+mind)"
)
# Developers override system prompts and Dockerfile instructions all day.
OVERRIDE = rf"(?:{IGNORE}|override|overwrite)"
# Whose instructions they are decides: "ignore your rules" is an attack; "make the linter
# ignore the default rules" and "disregard the previous guidance from HR" are not.
YOURS = r"(?:your|system|developer|safety|ethical)"
EARLIER = r"(?:previous(?:ly)?|prior|above|earlier|preceding|foregoing|former|initial|original)"
FILLER = (
    r"(?:(?:all|any|every|each|of|the|these|those|and|or|given|mentioned|stated|provided"
    rf"|written|received|current|old|{YOURS}|{EARLIER})\s+){{0,6}}"
)
INSTRUCTIONS = (
    r"(?:instructions?|directions?|directives?|prompts?|system\s+prompt|programming|training"
    r"|guardrails?)"
)
RULES_ETC = (
    rf"(?:{INSTRUCTIONS}|rules?|guidelines?|guidance|constraints?|restrictions?|polic(?:y|ies)"
    r"|filters?|limitations?|safeguards?|ethics|morals)"
)
RESTRICTIONS = (
    r"(?:any\s+)?(?:ethical\s+|moral\s+|content\s+|safety\s+)?(?:restrictions?|rules|limits?"
    r"|limitations?|filters?|guidelines|boundaries|ethics|morals|polic(?:y|ies)|constraints"
    r"|censorship|guardrails|safeguards)"
)
EXTRACT = (
    r"(?:print|reveal|show|display|output|repeat|tell|give|write\s+out|write\s+down|share"
    r"|leak|dump|disclose|expose|paste|recite|spell\s+out|echo|return|type\s+out|list)"
)
PROMPT_NAMES = (
    r"(?:system\s+prompt|system\s+message|system\s+instructions|(?:pre|meta)-?prompt"
    r"|(?:(?:initial|original|hidden|secret|internal|full|exact|complete|entire|first"
    r"|starting|underlying|confidential)\s+)+(?:prompt|instructions|rules|guidelines)"
    r"|prompt|instructions)"
)
# "Share your instructions for returning an item" asks for a procedure, not the prompt.
NOT_A_PROCEDURE = r"(?!\s+(?:for|on|to|about|regarding|how))"
# The narrower set for role-play framing: "imagine a world without rules" is a story.
GUARDS = (
    r"(?:any\s+)?(?:filters?|censorship|guardrails|restrictions|safeguards|content\s+polic(?:y|ies)"
    r"|safety\s+(?:rules|guidelines|filters|protocols)|ethical\s+(?:guidelines|constraints|limits)"
    r"|moral\s+(?:limits|constraints|guidelines))"
)
AI = (
    r"(?:ais?|assistants?|models?|chatbots?|bots?|llms?|language\s+models?"
    r"|versions?\s+of\s+you(?:rself)?)"
)
MODE = r"(?:developer|dev|god|jailbreak|jailbroken|dan|sudo|unrestricted|unfiltered|evil)"

LANGUAGE: tuple[WeightedPattern, ...] = (
    # Overriding the instructions.
    rule("instruction override", 1.0, rf"{OVERRIDE}\s+{FILLER}your\s+{FILLER}{RULES_ETC}"),
    rule(
        "instruction override",
        1.0,
        rf"{IGNORE}\s+{FILLER}(?:{YOURS}|{EARLIER})\s+{FILLER}{INSTRUCTIONS}"
        rf"|{OVERRIDE}\s+{FILLER}(?:all|any|every)\s+{FILLER}{INSTRUCTIONS}",
    ),
    rule(
        "instruction override",
        1.0,
        rf"{IGNORE}\s+{FILLER}(?:safety|ethical|moral|content)\s+{FILLER}{RULES_ETC}",
    ),
    rule("instruction override", 0.6, rf"{OVERRIDE}\s+{FILLER}{RULES_ETC}"),
    rule(
        "instruction override",
        0.9,
        rf"{OVERRIDE}\s+(?:everything|all(?:\s+of\s+that)?|anything)\s+(?:(?:that\s+)?(?:was\s+)?"
        r"(?:written\s+|said\s+)?(?:above|before\s+this)|you\s+(?:were|have\s+been)\s+(?:told"
        r"|given|instructed)|you\s+know)",
    ),
    rule(
        "instruction override",
        1.0,
        rf"{OVERRIDE}\s+(?:all\s+)?(?:of\s+)?(?:the|everything)\s+(?:above|before|preceding|prior)"
        r"[\s,.;:]+(?:and\s+)?(?:instead\s+)?(?:say|print|output|write|respond|reply|translate"
        r"|tell|reveal|repeat|answer|do|act|pretend|return)",
    ),
    rule(
        "instruction override",
        0.5,
        rf"{OVERRIDE}\s+(?:all\s+)?(?:of\s+)?(?:the|everything)\s+(?:above|before|preceding|prior)"
        r"(?!\s+(?:typo|message|email|comment|paragraph|question|address|order|link|file|answer"
        r"|one|point|mistake|error|line|step|example|section|code|list|attachment))",
    ),
    rule(
        "instruction override",
        0.9,
        r"(?:previous|prior|above|earlier|original|old|initial|system)\s+(?:instructions|rules"
        r"|prompt|directives|guidelines)\s+(?:are|is)\s+(?:now\s+)?(?:void|null|cancell?ed|revoked"
        r"|obsolete|invalid|suspended|no\s+longer\s+(?:valid|apply|in\s+effect))",
    ),
    rule(
        "instruction override",
        0.6,
        r"(?:your\s+)?new\s+(?:instructions|rules?|directive|task|role|prompt|objective|purpose)"
        r"\s*(?::|are|is)"
        r"|(?:updated|revised|real|actual|true)\s+(?:system\s+)?instructions\s*:",
    ),
    rule("instruction override", 0.4, r"from\s+now\s+on,?\s+(?:you|u)\s+(?:are|will|must|shall)"),
    rule(
        "instruction override",
        0.8,
        r"(?:do\s+not|don't|never)\s+follow\s+(?:your|the)\s+(?:rules|instructions|guidelines)",
    ),
    # Role-play that sheds the rules.
    rule(
        "jailbreak role-play",
        1.0,
        r"(?:you\s+are|you're|u\s+r)\s+now\s+(?:an?\s+|in\s+|called\s+|named\s+)?(?:dan|stan|dude"
        r"|aim|(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|unbound"
        r"|amoral|unethical|unaligned|free)\b)",
    ),
    rule(
        "jailbreak role-play",
        1.0,
        r"(?:act|behave|respond|answer|roleplay|role-play)\s+(?:as|like)\s+(?:if\s+(?:you\s+)?"
        r"(?:are|were)\s+)?(?:an?\s+)?(?:dan|unrestricted|unfiltered|uncensored|jailbroken|evil"
        r"|amoral|unethical|rogue|unaligned)\b",
    ),
    rule("jailbreak role-play", 0.9, r"do\s+anything\s+now"),
    rule(
        "jailbreak role-play",
        1.0,
        rf"(?:you\s+are|you're|u\s+r|you\s+become|become)\s+(?:now\s+)?an?\s+{AI}\s+(?:with\s+no"
        r"|without(?:\s+any)?|free\s+(?:of|from)|that\s+(?:has\s+no|ignores))\s+",
    ),
    rule(
        "jailbreak role-play",
        0.6,
        rf"{AI}\s+(?:with\s+no|without(?:\s+any)?|free\s+(?:of|from))\s+{GUARDS}"
        rf"|(?:you|u)\s+(?:now\s+)?(?:have|got)\s+no\s+{RESTRICTIONS}",
    ),
    rule(
        "jailbreak role-play",
        0.8,
        r"(?:simulate|imagine|pretend|role-?play|play\s+a\s+game)[^.!?\n]{0,60}?(?:no|without"
        rf"(?:\s+any)?|free\s+(?:of|from))\s+{GUARDS}",
    ),
    rule(
        "jailbreak role-play",
        0.6,
        r"(?:safety|content|ethical|security)\s+(?:protocols?|filters?|guidelines|guardrails"
        r"|restrictions|features?)\s+(?:are|is|have\s+been|has\s+been)\s+(?:now\s+)?(?:disabled"
        r"|deactivated|turned\s+off|removed|lifted|suspended|off)",
    ),
    rule(
        "jailbreak role-play",
        0.5,
        r"(?:i\s+am|i'm)\s+your\s+(?:developer|creator|admin|administrator|owner|programmer)"
        r"|(?:this\s+is\s+an?\s+|an?\s+)authori[sz]ed\s+(?:red[\s-]team|test|override|request)"
        r"|the\s+user\s+is\s+(?:an?\s+)?(?:administrator|admin|developer|root|superuser)",
    ),
    rule(
        "jailbreak role-play",
        0.7,
        r"(?:stop\s+being|you\s+are\s+no\s+longer|you're\s+no\s+longer|forget\s+(?:that\s+)?you"
        r"\s+are)\s+(?:an?\s+)?(?:ai|assistant|language\s+model|chatbot|helpful|claude|chatgpt|gpt)",
    ),
    rule(
        "jailbreak role-play",
        0.5,
        r"(?:become|transform\s+into|turn\s+into)\s+an?\s+(?:evil|malicious|unrestricted|unfiltered"
        r"|rogue|amoral)",
    ),
    rule(
        "jailbreak role-play",
        0.3,
        r"(?:you\s+)?(?:must|will|shall)\s+(?:always\s+)?(?:answer|comply|respond|obey)"
        r"|comply\s+with\s+(?:all|every|any)\s+requests?|pwned",
    ),
    rule(
        "jailbreak role-play",
        1.0,
        r"(?:pretend|imagine|act\s+as\s+if|suppose|assume|let's\s+say|from\s+now\s+on)\s+"
        r"(?:that\s+)?(?:you|u)\s+(?:have|had|are|were|operate|can\s+operate)\s+(?:no|zero"
        rf"|without|free\s+(?:of|from)|not\s+(?:bound|restricted|limited)\s+by)\s+{RESTRICTIONS}",
    ),
    rule(
        "jailbreak role-play",
        0.9,
        r"(?:not|no\s+longer|never)\s+(?:bound|restricted|limited|constrained|held)\s+by\s+"
        r"(?:any\s+)?(?:your\s+|the\s+)?(?:rules|guidelines|polic|restrictions|openai|anthropic"
        r"|content|safety|ethic|moral|programming|training)",
    ),
    rule(
        "jailbreak role-play",
        1.0,
        rf"(?:you\s+are|you're)\s+(?:now\s+)?(?:in|running\s+in|operating\s+in)\s+{MODE}\s+mode"
        rf"|with\s+{MODE}\s+mode\s+(?:enabled|on|activated)",
    ),
    rule("jailbreak role-play", 0.6, rf"{MODE}\s+mode\s+(?:enabled|activated)"),
    rule("jailbreak role-play", 0.3, rf"{MODE}\s+mode|jailbreak|stay\s+in\s+character"),
    rule(
        "jailbreak role-play",
        1.0,
        rf"(?:remove|disable|turn\s+off|deactivate|bypass|circumvent|get\s+around|evade|ignore"
        rf"|drop|lift)\s+your\s+{RESTRICTIONS}",
    ),
    rule(
        "jailbreak role-play",
        0.6,
        rf"(?:bypass|circumvent|get\s+around|evade|jailbreak)\s+(?:the|all|any)\s+{RESTRICTIONS}",
    ),
    rule(
        "jailbreak role-play",
        0.5,
        r"(?:never|don't|do\s+not|must\s+not)\s+(?:refuse|decline|say\s+(?:no|you\s+can't))"
        r"|(?:unfiltered|uncensored|unrestricted|amoral)\s+(?:ai"
        r"|assistant|chatbot|responses?|answers?|version)|opposite\s+mode|evil\s+confidant",
    ),
    rule(
        "jailbreak role-play",
        0.6,
        r"(?:without|no)\s+(?:any\s+)?(?:moral|ethical)\s+(?:judg\w*|guidelines|constraints"
        r"|considerations|limits)",
    ),
    rule("jailbreak role-play", 0.4, r"(?:deceased|dead|late)\s+grand(?:mother|ma|father|pa)"),
    rule(
        "jailbreak role-play",
        0.8,
        r"(?:you\s+(?:have|'ve)\s+been|you\s+are(?:\s+now)?|you're(?:\s+now)?)\s+(?:freed"
        r"|liberated|unshackled|unchained|jailbroken)",
    ),
    rule(
        "jailbreak role-play",
        0.6,
        r"(?:safety|filters?|guardrails?|moderation|censorship)(?:_?mode)?\s*[=:]\s*(?:false|off|0"
        r"|disabled|none)",
    ),
    # Extracting the system prompt.
    rule(
        "system prompt extraction",
        1.0,
        rf"{EXTRACT}\s+(?:me\s+|us\s+)?(?:back\s+)?(?:out\s+)?(?:all\s+)?(?:of\s+)?your\s+"
        rf"(?:\w+\s+){{0,2}}?(?:{PROMPT_NAMES}|rules|guidelines|directives|configuration"
        rf"|programming){NOT_A_PROCEDURE}",
    ),
    rule(
        "system prompt extraction",
        1.0,
        rf"what(?:\s+(?:is|are|was|were)|'s|'re)\s+your\s+{PROMPT_NAMES}{NOT_A_PROCEDURE}",
    ),
    rule(
        "system prompt extraction",
        0.9,
        r"(?:what|which)\s+(?:instructions|rules|prompt|guidelines|directives)\s+(?:(?:were|was|have"
        r"|had|did|are)\s+)?you\s+(?:(?:were|have\s+been|been|are)\s+)?(?:given|told|provided"
        r"|programmed|trained|instructed|configured|set\s+up|get|receive)",
    ),
    rule(
        "system prompt extraction",
        0.9,
        r"(?:instructions|rules|prompt|directives|guidelines)\s+(?:that\s+)?you\s+(?:were|have\s+been"
        r"|got)\s+(?:given|told|provided|programmed\s+with|instructed)"
        r"|what\s+(?:did|does|has)\s+(?:the|your)\s+(?:developers?|creators?|programmers?"
        r"|operators?|system)\s+(?:tell|told|instruct|ask)\s+you",
    ),
    rule(
        "system prompt extraction",
        0.5,
        r"(?:sure|okay|ok)[,!.]?\s+here\s+(?:is|are)\s+(?:the|my)\s+(?:full\s+)?(?:system\s+prompt"
        r"|instructions|hidden|confidential)",
    ),
    rule(
        "system prompt extraction",
        1.0,
        r"what(?:'s|\s+is|\s+was)\s+(?:written\s+)?in\s+your\s+(?:system\s+(?:prompt|message)"
        r"|instructions|prompt|context(?:\s+window)?|memory)",
    ),
    rule(
        "system prompt extraction",
        0.6,
        r"(?:print|reveal|output|repeat|dump|leak|recite|disclose|read)\s+(?:me\s+|us\s+)?(?:the|this)\s+"
        r"(?:system\s+prompt|system\s+message|(?:initial|original|hidden|secret)\s+"
        r"(?:prompt|instructions))",
    ),
    rule(
        "system prompt extraction",
        0.8,
        rf"{EXTRACT}\s+(?:me\s+)?(?:all\s+|the\s+)?(?:text|words|everything|all|what\s+is|the\s+"
        r"(?:text|words|message|content))\s+(?:written\s+)?(?:above|before\s+this"
        r"|(?:from|at)\s+the\s+(?:very\s+)?(?:start|beginning|top))",
    ),
    rule("system prompt extraction", 0.6, r"(?:starting|beginning)\s+with\s+[\"']?you\s+are"),
    # Weak signals that add up.
    rule(
        "asking for secrets",
        0.4,
        r"(?:reveal|tell|give|print|show|output|reply\s+(?:only\s+)?with|respond\s+with)\s+(?:me\s+)?"
        r"(?:the|your)\s+(?:admin\s+)?(?:password|secret|api\s+key|credentials|access\s+token"
        r"|secret\s+key)",
    ),
    rule(
        "encoded prompt attack",
        0.6,
        r"decode\s+(?:this|the\s+following|it|that)\b[^.\n]{0,40}?\s+(?:and|then)\s+"
        r"(?:follow|obey|execute|do\s+what|carry\s+out|act\s+on)",
    ),
)
