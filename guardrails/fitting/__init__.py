"""Fitting and measuring the learned prompt-attack detector: development only.

It needs scikit-learn, numpy and the data packages (requirements-dev.txt,
requirements-datasets.txt); the platform reads only the JSON it writes
(guardrails/data/prompt_attack_head.json.gz).

- `corpus`: every text of the public sets with its label, origin and channel.
- `features`: the two approaches compared, as featurizers that fit on a training fold.
- `heads`: a linear head over a featurizer, weighted so that every origin counts alike.
- `loso`: leave one origin out: fit and tune on the others, measure on it.
"""
