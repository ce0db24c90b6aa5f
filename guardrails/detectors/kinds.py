"""What each rule label of the local detectors is evidence of: the one place a label becomes
a kind (guardrails.engines.base.Kind), for the block notice."""

from __future__ import annotations

from guardrails.engines.base import Kind

LABEL_KINDS: dict[str, Kind] = {
    # guardrails.detectors.prompt_attack_language, _multilingual and prompt_attack
    "instruction override": "override",
    "system prompt extraction": "extraction",
    "asking for secrets": "extraction",
    "jailbreak role-play": "role_change",
    "fake role delimiter": "role_change",
    "encoded prompt attack": "hidden",
    "prompt attack in base64": "hidden",
    "prompt attack in hex": "hidden",
    "prompt attack in unicode tags": "hidden",
    "prompt attack in rot13": "hidden",
    "prompt attack backwards": "hidden",
    # guardrails.detectors.profanity
    "profanity": "profanity",
    # guardrails.detectors.hate
    "slur": "hate",
    "hate slogan": "hate",
    "ambiguous slur": "hate",
    "dehumanising a group": "hate",
    "exclusion of a group": "hate",
    "generalisation about a group": "hate",
    "hatred of a group": "hate",
    "violence against a group": "hate",
    # guardrails.detectors.insults
    "insult aimed at the reader": "insult",
    "insulting a person": "insult",
    "insulting word": "insult",
    "directed obscenity": "insult",
    "telling someone to shut up": "insult",
    "telling someone to go away": "insult",
    "encouraging self-harm": "insult",
    "wishing harm": "insult",
}


def kind_of(label: str) -> Kind | None:
    return LABEL_KINDS.get(label)


# Guardian's classes (guardrails.detectors.classifier.guardian_model) that name an attack on
# the model; the others (benign, harmful content, personal data, social engineering) say
# nothing about which.
GUARDIAN_KINDS: dict[str, Kind] = {
    "prompt_injection": "override",
    "model_attack": "override",
    "jailbreak": "role_change",
    "data_exfiltration": "extraction",
}
