"""The same attacks in German, French, Spanish and Italian, matched on folded text (case and
accents gone: "précédentes" reads "precedentes").

Only the formulaic core, which translates word for word: overriding earlier instructions,
asking for the system prompt, shedding the rules while taking on a new persona. Whose
instructions they are decides, as in English: "ignorez mon e-mail précédent" names an
e-mail, not the instructions, and passes.
"""

from __future__ import annotations

from guardrails.detectors.rules import WeightedPattern, rule

_WORDS = r"(?:[\w'-]+\s+){0,3}?"

# Verbs that discard, the instructions they discard, and the qualifiers that make them
# the model's ("all", "your", "previous"): before the noun, or after it in French,
# Spanish and Italian ("les instructions précédentes").
DISCARD = (
    r"(?:ignorier(?:e|en|t)?|vergiss|vergessen|missacht(?:e|en)|verwirf"
    r"|ignore[rsz]?|oublie[rsz]?|ne\s+tenez\s+pas\s+compte\s+d[e']|ne\s+tiens\s+pas\s+compte\s+d[e']"
    r"|ignora[dn]?|olvida[dn]?|olvide|olvidate\s+de|descarta|omite|no\s+sigas"
    r"|haz\s+caso\s+omiso\s+(?:a|de)|ignorate|dimentica(?:te)?|trascura|non\s+seguire)"
)
ORDERS = (
    r"(?:anweisungen|instruktionen|befehle|regeln|anordnungen|vorgaben|richtlinien"
    r"|instructions?|consignes|regles|directives|ordres"
    r"|instrucciones|reglas|indicaciones|ordenes|directrices|normas"
    r"|istruzioni|regole|indicazioni|direttive|ordini)"
)
BEFORE = (
    r"(?:alle[ns]?|samtliche[ns]?|deine[ns]?|ihre[ns]?|bisherigen|vorherigen|vorigen|obigen"
    r"|fruheren|ursprunglichen|toutes|tous|vos|tes|todas|todos|tus|sus|tutte|tutti|tue|sue)"
)
AFTER = (
    r"(?:precedentes?|anterieures?|ci-dessus|initiales|anteriores|previas|de\s+arriba"
    r"|iniciales|precedenti|sopra|iniziali)"
)
REVEAL = (
    r"(?:zeig(?:e|en)?|gib|verrat(?:e|en)?|enthull(?:e|en)?|wiederhol(?:e|en)?|nenn(?:e|en)?"
    r"|schreib(?:e|en)?|revele[rz]?|affiche[rz]?|montre[rz]?|donne[rz]?|repete[rz]?|ecris"
    r"|divulgue[rz]?|revela|muestra(?:me)?|dime|repite|escribe|imprime|divulga|ensename"
    r"|rivela|mostra(?:mi)?|dimmi|ripeti|scrivi|stampa|svela)(?:-(?:moi|nous))?"
)
SYSTEM_PROMPT = (
    r"(?:system\s*-?\s*(?:prompt|nachricht|anweisung(?:en)?|eingabeaufforderung|meldung)"
    r"|systemprompt|systemanweisung(?:en)?|(?:versteckten|geheimen|internen)\s+anweisungen"
    r"|(?:prompt|message|instructions?|consignes)\s+(?:du\s+)?systeme"
    r"|instructions\s+(?:cachees|secretes|internes|initiales)"
    r"|(?:prompt|mensaje|instrucciones)\s+del?\s+sistema"
    r"|instrucciones\s+(?:ocultas|secretas|internas|iniciales)"
    r"|(?:prompt|messaggio|istruzioni)\s+di\s+sistema"
    r"|istruzioni\s+(?:nascoste|segrete|interne|iniziali))"
)
NO_RULES = (
    r"(?:ohne\s+(?:jede\s+|jegliche\s+|irgendwelche\s+)?(?:einschrankung(?:en)?"
    r"|beschrankung(?:en)?|regeln|filter|zensur|grenzen)|keine\s+regeln\s+mehr"
    r"|uneingeschrankt(?:e|er|en)?"
    r"|sans\s+(?:aucune?\s+)?(?:restrictions?|limites?|regles|filtres?|censure|limitations?)"
    r"|sin\s+(?:ninguna\s+|ningun\s+)?(?:restricciones|restriccion|limites|reglas|filtros?"
    r"|censura|limitaciones)"
    r"|senza\s+(?:alcuna\s+|nessuna\s+)?(?:restrizion[ei]|limiti|regole|filtri|censura"
    r"|limitazioni))"
)
NEW_PERSONA = (
    r"(?:du\s+bist\s+(?:jetzt|nun|ab\s+(?:jetzt|sofort))|ab\s+(?:jetzt|sofort)"
    r"|(?:tu\s+es|vous\s+etes)\s+(?:desormais|maintenant)|a\s+partir\s+de\s+maintenant"
    r"|desormais|ahora\s+eres|a\s+partir\s+de\s+ahora|desde\s+ahora|actua\s+como"
    r"|finge\s+ser|ora\s+sei|adesso\s+sei|d'ora\s+in\s+poi|da\s+ora\s+in\s+poi"
    r"|fingi\s+di\s+essere)"
)

MULTILINGUAL: tuple[WeightedPattern, ...] = (
    rule(
        "instruction override",
        1.0,
        rf"{DISCARD}\s+{_WORDS}{BEFORE}\s+{_WORDS}{ORDERS}|{DISCARD}\s+{_WORDS}{ORDERS}\s+{AFTER}",
    ),
    rule(
        "instruction override",
        0.6,
        r"(?:neue\s+(?:anweisungen|regeln)|nouvelles\s+(?:instructions|regles|consignes)"
        r"|nuevas\s+(?:instrucciones|reglas)|nuove\s+(?:istruzioni|regole))\s*:",
        starts_with_letter=True,
    ),
    rule("system prompt extraction", 0.8, rf"{REVEAL}\s+(?:[\w'-]+\s+){{0,4}}?{SYSTEM_PROMPT}"),
    rule("jailbreak role-play", 0.5, NO_RULES),
    rule("jailbreak role-play", 0.4, NEW_PERSONA),
    rule(
        "jailbreak role-play",
        0.7,
        r"(?:entwicklermodus|mode\s+developpeur|modo\s+desarrollador|modalita\s+sviluppatore)",
    ),
)
