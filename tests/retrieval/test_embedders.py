"""Embedders: the local one on its own, Titan and OpenAI through their real SDKs, over HTTP,
against the fake servers. No database."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from django.conf import settings

from retrieval.embedders.base import EmbeddingError
from retrieval.embedders.bedrock import BedrockEmbedder
from retrieval.embedders.local import LocalEmbedder, words
from retrieval.embedders.openai import OpenAIEmbedder
from retrieval.embedders.registry import embedder_for
from tests.fakes.bedrock import FakeBedrock, bedrock_environment, titan_embedding
from tests.fakes.openai import FakeOpenAI, openai_embedding
from tests.fakes.server import Fail, Turn

ROOT = Path(__file__).resolve().parents[2]
TITAN = "amazon.titan-embed-text-v2:0"


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(vector: list[float]) -> float:
    return math.hypot(*vector)


# ---------------------------------------------------------------- local


@pytest.mark.parametrize("dimension", [1, 7, 384, 1024])
def test_local_vectors_have_the_dimension_and_unit_norm(dimension: int) -> None:
    texts = ["The quick brown fox", "jumps over the lazy dog " * 50, "", "?!"]

    vectors = LocalEmbedder(dimension=dimension).embed(texts)

    assert [len(v) for v in vectors] == [dimension] * 4
    assert [norm(v) for v in vectors] == pytest.approx([1.0] * 4)


def test_local_vectors_are_the_same_in_another_embedder_and_another_process() -> None:
    texts = ["Invoices are due within 30 days.", "Zürich straße 東京 हिन्दी", ""]
    script = (
        "import json, sys; from retrieval.embedders.local import LocalEmbedder; "
        "print(json.dumps(LocalEmbedder(dimension=384).embed(json.loads(sys.argv[1]))))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "4242", "PYTHONPATH": str(ROOT)}

    done = subprocess.run(  # noqa: S603 (our own interpreter, our own script)
        [sys.executable, "-c", script, json.dumps(texts)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )

    mine = LocalEmbedder(dimension=384).embed(texts)
    assert LocalEmbedder(dimension=384).embed(texts) == mine
    assert json.loads(done.stdout) == mine


def test_local_vectors_are_pinned() -> None:
    # Stored chunks were embedded by this exact function: a change must be deliberate
    # (and comes with a re-ingestion of every document).
    vector = LocalEmbedder(dimension=16).embed(["New York, new york!"])[0]

    expected = [0.0, 0.0, -0.322745, 0.0, -0.546454, 0.546454, 0.0, 0.546454] + [0.0] * 8
    assert vector == pytest.approx(expected, abs=1e-6)


def test_local_texts_sharing_words_are_closer_than_unrelated_ones() -> None:
    query, related, unrelated = LocalEmbedder(dimension=384).embed(
        [
            "How do I reset my account password?",
            "To reset a forgotten password, open the account settings page.",
            "The cafeteria serves vegetarian lasagna on Thursdays.",
        ]
    )

    # Three words of thirteen features shared: about 3 / sqrt(13 x 21).
    assert cosine(query, related) > 0.15
    assert abs(cosine(query, unrelated)) < 0.1


def test_local_word_order_counts_through_bigrams() -> None:
    embedder = LocalEmbedder(dimension=384)
    query, phrase, swapped = embedder.embed(["new york", "a new york pizza", "a york new pizza"])

    assert cosine(query, phrase) > cosine(query, swapped)
    assert cosine(*embedder.embed(["new york", "york new"])) < 0.9


def test_local_case_accents_and_compatibility_forms_are_folded() -> None:
    embedder = LocalEmbedder(dimension=384)

    assert embedder.embed(["Café CRÈME, naïve"]) == embedder.embed(["cafe creme naive"])
    assert embedder.embed(["Straße ﬁne"]) == embedder.embed(["STRASSE fine"])
    assert words("Ｆｕｌｌ ｗｉｄｔｈ") == ["full", "width"]


def test_local_words_keep_their_combining_marks() -> None:
    assert words("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert words("اللغة العربية") == ["اللغة", "العربية"]
    assert words("ภาษาไทย") == ["ภาษาไทย"]  # no spaces between Thai words: one token


def test_local_cjk_text_is_split_into_characters() -> None:
    embedder = LocalEmbedder(dimension=384)
    query, related, unrelated = embedder.embed(["東京の天気", "東京は晴れ、天気が良い", "大阪城"])

    assert words("東京に住む") == ["東", "京", "に", "住", "む"]
    assert cosine(query, related) > cosine(query, unrelated)


def test_local_text_without_words_is_a_fixed_unit_vector_not_zeros() -> None:
    empty, punctuation, blank = LocalEmbedder(dimension=384).embed(["", "?! …", " \n\t"])

    assert empty == punctuation == blank
    assert norm(empty) == pytest.approx(1.0)
    assert sorted(abs(v) for v in empty)[-2:] == [0.0, 1.0]


def test_local_embeds_a_batch_in_order_and_nothing_for_no_texts() -> None:
    embedder = LocalEmbedder(dimension=64)

    assert embedder.embed([]) == []
    assert embedder.embed(["alpha", "beta", "alpha"]) == [
        embedder.embed(["alpha"])[0],
        embedder.embed(["beta"])[0],
        embedder.embed(["alpha"])[0],
    ]


def test_local_refuses_a_dimension_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        LocalEmbedder(dimension=0)


# ---------------------------------------------------------------- bedrock


@pytest.fixture(scope="module")
def bedrock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeBedrock]:
    with bedrock_environment(tmp_path_factory.mktemp("aws")) as fake:
        yield fake


@pytest.fixture
def bedrock(bedrock_server: FakeBedrock) -> FakeBedrock:
    bedrock_server.reset()
    bedrock_server.fallback = Turn()
    return bedrock_server


def titan(dimension: int = 256, **kwargs: float) -> BedrockEmbedder:
    options = {"max_retries": 0, "timeout": 5.0} | kwargs
    return BedrockEmbedder(dimension=dimension, **options)  # type: ignore[arg-type]


def test_titan_request_asks_for_the_dimension_and_normalised_vectors(
    bedrock: FakeBedrock,
) -> None:
    vectors = titan(512).embed(["Refunds take five days."])

    assert bedrock.bodies == [
        {"inputText": "Refunds take five days.", "dimensions": 512, "normalize": True}
    ]
    assert bedrock.model_ids() == [TITAN]
    assert bedrock.requests[0].path.endswith("/invoke")
    assert vectors == [titan_embedding("Refunds take five days.", 512)]


def test_titan_batch_comes_back_in_input_order(bedrock: FakeBedrock) -> None:
    texts = [f"chunk number {i}" for i in range(20)]
    # Later requests answer sooner, so calls finish out of order.
    bedrock.script(*(Turn(delay=0.01 * (20 - i)) for i in range(20)))

    vectors = titan().embed(texts)

    assert vectors == [titan_embedding(text, 256) for text in texts]
    assert sorted(bedrock.input_texts()) == sorted(texts)


def test_titan_calls_of_a_batch_run_concurrently(bedrock: FakeBedrock) -> None:
    # The fake's delay is a sleep, which a busy machine does not stretch: one after the
    # other, the eight calls take at least 8 s; together, 1 s and whatever the machine adds
    # (up to 6 s, a margin a loaded machine honours).
    bedrock.fallback = Turn(delay=1.0)

    started = time.monotonic()
    titan(timeout=30.0).embed([f"text {i}" for i in range(8)])

    assert time.monotonic() - started < 7 * 1.0
    assert len(bedrock.requests) == 8


def test_titan_throttled_call_is_retried(bedrock: FakeBedrock) -> None:
    bedrock.script(Fail(429))

    vectors = titan(max_retries=2).embed(["hello"])

    assert vectors == [titan_embedding("hello", 256)]
    assert bedrock.input_texts() == ["hello", "hello"]


def test_titan_failing_every_time_raises_after_its_retries(bedrock: FakeBedrock) -> None:
    bedrock.fallback = Fail(500, "the model is down")

    with pytest.raises(EmbeddingError, match=r"the model is down \(HTTP 500, 3 attempts\)"):
        titan(max_retries=2).embed(["hello"])

    assert len(bedrock.requests) == 3


def test_titan_failure_in_a_batch_fails_the_batch(bedrock: FakeBedrock) -> None:
    bedrock.script(Turn(), Fail(403, "no access to the model"))

    with pytest.raises(EmbeddingError, match="AccessDeniedException"):
        titan().embed(["one", "two", "three"])


def test_titan_validation_error_is_not_retried(bedrock: FakeBedrock) -> None:
    with pytest.raises(EmbeddingError, match=r"ValidationException.*minLength"):
        titan(max_retries=3).embed([""])

    assert len(bedrock.requests) == 1


@pytest.mark.parametrize("dimension", [128, 384, 1536])
def test_titan_refuses_a_dimension_it_does_not_support(dimension: int) -> None:
    with pytest.raises(ValueError, match="256, 512, 1024"):
        BedrockEmbedder(dimension=dimension)


def test_titan_embeds_nothing_without_a_call(bedrock: FakeBedrock) -> None:
    assert titan().embed([]) == []
    assert bedrock.requests == []


# ---------------------------------------------------------------- openai


@pytest.fixture(scope="module")
def openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake, pytest.MonkeyPatch.context() as patch:
        for name, value in (("OPENAI_BASE_URL", fake.base_url), ("OPENAI_API_KEY", "sk-test")):
            patch.setenv(name, value)
            patch.setattr(settings, name, value, raising=False)
        yield fake


@pytest.fixture
def fake_openai(openai_server: FakeOpenAI) -> FakeOpenAI:
    openai_server.reset()
    openai_server.fallback = Turn()
    return openai_server


def compatible(dimension: int = 256, **kwargs: object) -> OpenAIEmbedder:
    options = {"max_retries": 0, "timeout": 5.0} | kwargs
    return OpenAIEmbedder(dimension=dimension, **options)  # type: ignore[arg-type]


def test_openai_sends_batches_of_batch_size(fake_openai: FakeOpenAI) -> None:
    texts = [f"passage {i}" for i in range(150)]

    vectors = compatible(batch_size=64).embed(texts)

    assert [len(body["input"]) for body in fake_openai.bodies] == [64, 64, 22]
    assert [t for body in fake_openai.bodies for t in body["input"]] == texts
    assert vectors == [openai_embedding(text, 256) for text in texts]


def test_openai_request_names_the_model_and_dimensions(fake_openai: FakeOpenAI) -> None:
    compatible(384).embed(["a"])
    compatible(1024, model="text-embedding-3-large").embed(["b"])

    first, second = fake_openai.bodies
    assert first == {
        "model": "text-embedding-3-small",
        "input": ["a"],
        "dimensions": 384,
        "encoding_format": "float",
    }
    assert (second["model"], second["dimensions"]) == ("text-embedding-3-large", 1024)
    headers = {name.lower(): value for name, value in fake_openai.requests[0].headers.items()}
    assert headers["authorization"] == "Bearer sk-test"


def test_openai_vectors_follow_index_not_answer_order(fake_openai: FakeOpenAI) -> None:
    fake_openai.reverse_embeddings = True
    texts = ["first", "second", "third"]

    vectors = compatible().embed(texts)

    assert vectors == [openai_embedding(text, 256) for text in texts]


def test_openai_rate_limited_request_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Fail(429, retry_after_ms=10))

    vectors = compatible(max_retries=2).embed(["hello"])

    assert vectors == [openai_embedding("hello", 256)]
    assert len(fake_openai.requests) == 2


def test_openai_failing_every_time_raises_after_its_retries(fake_openai: FakeOpenAI) -> None:
    fake_openai.fallback = Fail(500, "overloaded", retry_after_ms=10)

    with pytest.raises(EmbeddingError, match=r"HTTP 500\): overloaded"):
        compatible(max_retries=2).embed(["hello"])

    assert len(fake_openai.requests) == 3


def test_openai_refusal_is_an_embedding_error(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(EmbeddingError, match=r"HTTP 400.*input"):
        compatible(max_retries=2).embed([""])

    assert len(fake_openai.requests) == 1


def test_openai_without_an_api_key_is_an_embedding_error(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setattr(settings, "OPENAI_API_KEY", None, raising=False)

    with pytest.raises(EmbeddingError, match="not configured"):
        compatible().embed(["hello"])

    assert fake_openai.requests == []


def test_fake_openai_answers_base64_as_the_sdk_asks_by_default(fake_openai: FakeOpenAI) -> None:
    client = openai.OpenAI(base_url=fake_openai.base_url, api_key="sk-test", max_retries=0)

    response = client.embeddings.create(model="text-embedding-3-small", input=["hi"])

    assert fake_openai.bodies[0]["encoding_format"] == "base64"
    assert response.data[0].embedding == pytest.approx(openai_embedding("hi"), abs=1e-6)


# ---------------------------------------------------------------- registry


def test_registry_builds_each_provider_with_its_options() -> None:
    local = embedder_for("local", dimension=384)
    titan_embedder = embedder_for("bedrock", dimension=1024, max_retries=5, timeout=9.0)
    compatible_embedder = embedder_for("openai", dimension=256, model="m", batch_size=16)

    assert isinstance(local, LocalEmbedder)
    assert local.dimension == 384
    assert isinstance(titan_embedder, BedrockEmbedder)
    assert (titan_embedder.dimension, titan_embedder.max_retries) == (1024, 5)
    assert isinstance(compatible_embedder, OpenAIEmbedder)
    assert (compatible_embedder.model, compatible_embedder.batch_size) == ("m", 16)
    assert embedder_for("local", dimension=384) is local


def test_registry_refuses_an_unknown_provider() -> None:
    with pytest.raises(LookupError, match="unknown embedding provider 'cohere'"):
        embedder_for("cohere", dimension=384)


def test_registry_passes_on_a_providers_refusal() -> None:
    with pytest.raises(ValueError, match="256, 512, 1024"):
        embedder_for("bedrock", dimension=384)
