"""Chunking: pieces are exact slices of the source (`text[start:end] == piece.text`, trimmed
of whitespace), never longer than `size` tokens, cut at sentence boundaries, overlapping by
trailing whole sentences."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from retrieval.chunking import Piece, count_tokens, split


def check_invariants(text: str, pieces: list[Piece], size: int) -> None:
    assert [p.position for p in pieces] == list(range(len(pieces)))
    for piece in pieces:
        assert text[piece.start : piece.end] == piece.text
        assert piece.text
        assert piece.text == piece.text.strip()
        assert piece.token_count == count_tokens(piece.text)
        assert 0 < piece.token_count <= size
    for before, after in itertools.pairwise(pieces):
        assert before.start < after.start
        assert before.end < after.end
    covered = [False] * len(text)
    for piece in pieces:
        covered[piece.start : piece.end] = [True] * (piece.end - piece.start)
    assert all(c for c, char in zip(covered, text, strict=True) if not char.isspace())


def sentence_spans(text: str, sentences: list[str]) -> tuple[set[int], set[int]]:
    starts, ends, at = set(), set(), 0
    for sentence in sentences:
        at = text.index(sentence, at)
        starts.add(at)
        ends.add(at + len(sentence))
        at += len(sentence)
    return starts, ends


# --- tokens ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("hello, world!", 4),
        ("3.14 and 1,000.50", 3),
        ("e.g.", 4),
        ("naïve café Zoë", 3),
        ("中文句子。", 5),
        ("ひらがなカタカナ", 8),
        ("한국어", 3),
        ("party 🎉", 2),
        ("x" * 16, 1),
        ("x" * 40, 3),
        ("snake_case_name", 1),
    ],
)
def test_count_tokens(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


# --- arguments and trivial input ---------------------------------------------------------


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, 11), (10, -1)])
def test_size_must_exceed_overlap_and_overlap_be_non_negative(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="size > overlap"):
        split("Some text.", size=size, overlap=overlap)


@pytest.mark.parametrize("text", ["", " ", "\n\n\t \r\n", "\u3000\u00a0"])
def test_empty_or_whitespace_text_has_no_pieces(text: str) -> None:
    assert split(text) == []


def test_short_text_is_one_trimmed_piece() -> None:
    text = "\n  Just one sentence here.  \n"
    assert split(text) == [Piece(0, "Just one sentence here.", 5, 3, 26)]


# --- sentences ---------------------------------------------------------------------------

TRICKY = [
    "Dr. Smith measured 3.14 litres at 5 p.m. on Jan. 4, e.g. in the lab.",
    "Mr. Jones paid $4.50 for the U.S. edition, i.e. the cheap one.",
    "Was it worth it?",
    "Nobody knows!",
]


def test_abbreviations_and_decimals_do_not_end_a_sentence() -> None:
    text = " ".join(TRICKY * 10)
    starts, ends = sentence_spans(text, TRICKY * 10)

    pieces = split(text, size=60, overlap=26)

    check_invariants(text, pieces, 60)
    assert len(pieces) > 5
    assert {p.end for p in pieces} <= ends
    assert {p.start for p in pieces} <= starts


def test_a_blank_line_ends_a_sentence_without_punctuation() -> None:
    pieces = split("Title line\n\nFirst sentence here.", size=5, overlap=0)
    assert [p.text for p in pieces] == ["Title line", "First sentence here."]


def test_a_sentence_longer_than_size_is_cut_between_words() -> None:
    text = " ".join(f"word{i}" for i in range(100)) + "."

    pieces = split(text, size=30, overlap=5)

    check_invariants(text, pieces, 30)
    assert len(pieces) > 3
    for piece in pieces:
        assert piece.start == 0 or text[piece.start - 1] == " "
        assert piece.end == len(text) or text[piece.end] == " "


def test_cjk_sentences_end_at_full_stops() -> None:
    sentences = ["这是第一句话。", "这是第二句话！", "第三句话在这里？", "最后一句。"] * 5
    text = "".join(sentences)
    _, ends = sentence_spans(text, sentences)

    pieces = split(text, size=20, overlap=8)

    check_invariants(text, pieces, 20)
    assert {p.end for p in pieces} <= ends


# --- overlap -----------------------------------------------------------------------------


def uniform_sentences(n: int) -> list[str]:
    sentences = [f"Dr. Smith paid {i}.5 pounds on day {i}, e.g. at noon." for i in range(n)]
    assert len({count_tokens(s) for s in sentences}) == 1
    return sentences


@pytest.mark.parametrize(("size", "overlap"), [(64, 32), (64, 34), (100, 40), (40, 20), (200, 17)])
def test_overlap_is_the_trailing_whole_sentences_that_fit(size: int, overlap: int) -> None:
    sentences = uniform_sentences(40)
    per = count_tokens(sentences[0])
    assert per == 17
    text = " ".join(sentences)
    starts, ends = sentence_spans(text, sentences)

    pieces = split(text, size=size, overlap=overlap)

    check_invariants(text, pieces, size)
    assert {p.start for p in pieces} <= starts
    assert {p.end for p in pieces} <= ends
    for before, after in itertools.pairwise(pieces):
        shared = text[after.start : before.end] if after.start < before.end else ""
        assert count_tokens(shared) == (overlap // per) * per
        assert before.text.endswith(shared)
        assert after.text.startswith(shared)
    assert all(p.token_count == (size // per) * per for p in pieces[:-1])


def test_overlap_falls_back_to_words_when_the_last_sentence_is_longer() -> None:
    first = " ".join(f"w{i}" for i in range(20)) + "."  # 21 tokens
    second = " ".join(f"v{i}" for i in range(20)) + "."
    text = f"Short one here. {first} {second}"

    pieces = split(text, size=25, overlap=5)

    check_invariants(text, pieces, 25)
    assert pieces[0].text == f"Short one here. {first}"
    # Beside the 21 tokens of `second` there is room for 4: the last words of `first`.
    assert pieces[1].text == f"w17 w18 w19. {second}"


def test_overlap_takes_whole_sentences_when_one_fits() -> None:
    first = " ".join(f"w{i}" for i in range(20)) + "."
    second = " ".join(f"v{i}" for i in range(20)) + "."
    text = f"{first} Short one here. {second}"

    pieces = split(text, size=25, overlap=5)

    assert [p.text for p in pieces] == [f"{first} Short one here.", f"Short one here. {second}"]


def test_no_overlap_when_zero() -> None:
    text = " ".join(uniform_sentences(30))

    pieces = split(text, size=50, overlap=0)

    check_invariants(text, pieces, 50)
    for before, after in itertools.pairwise(pieces):
        assert text[before.end : after.start] == " "


# --- long words --------------------------------------------------------------------------


def test_one_huge_word_is_cut_into_pieces_of_size_tokens() -> None:
    word = "x" * 10_000  # 625 tokens of 16 characters

    pieces = split(word, size=256, overlap=32)

    check_invariants(word, pieces, 256)
    assert [p.token_count for p in pieces[:2]] == [256, 256]
    assert pieces[0].text == "x" * 4096
    assert pieces[1].start == 4096  # a full piece leaves no room for overlap
    assert pieces[-1].end == len(word)


def test_a_huge_word_gets_pieces_of_its_own() -> None:
    word = "ab" * 5_000
    text = f"Before the blob. {word} After the blob."

    pieces = split(text, size=64, overlap=8)

    check_invariants(text, pieces, 64)
    assert pieces[0].text == "Before the blob."
    assert all(set(p.text) == {"a", "b"} for p in pieces[1:-1])


# --- Unicode, newlines, determinism ------------------------------------------------------


def test_unicode_offsets_are_code_point_exact() -> None:
    sentences = [
        "Émile a payé 3,50 € pour un café crème 🎉.",
        "Zoë’s naïve résumé was déjà vu 🤷‍♀️!",
        "東京は大きい都市です。",
        "Ça va très bien, merci.",
    ] * 6
    text = " ".join(sentences)
    starts, ends = sentence_spans(text, sentences)

    pieces = split(text, size=40, overlap=15)

    check_invariants(text, pieces, 40)
    assert max(count_tokens(s) for s in sentences) <= 15
    assert {p.start for p in pieces} <= starts
    assert {p.end for p in pieces} <= ends


def test_windows_newlines_split_like_unix_newlines() -> None:
    unix = "\n\n".join(
        f"Paragraph {i} starts here.\nIt has a second line, e.g. this one." for i in range(30)
    )
    windows = unix.replace("\n", "\r\n")

    from_unix = split(unix, size=40, overlap=10)
    from_windows = split(windows, size=40, overlap=10)

    check_invariants(windows, from_windows, 40)
    assert [p.text.replace("\r\n", "\n") for p in from_windows] == [p.text for p in from_unix]
    assert [p.token_count for p in from_windows] == [p.token_count for p in from_unix]
    assert all(not p.text.endswith("\r") for p in from_windows)


def test_splitting_is_deterministic() -> None:
    text = " ".join(TRICKY * 50)
    assert split(text, size=50, overlap=12) == split(text, size=50, overlap=12)


def random_text(rng: random.Random) -> str:
    vocabulary = [
        "the", "Dr.", "e.g.", "3.14", "1,000", "naïve", "café", "🎉", "中文", "句子。",
        "word!", "why?", "(aside)", "—", "x" * rng.randint(17, 90), "end.", "\n", "\n\n",
        "\r\n", "\t", "Mr.", "U.S.", "…", "«quote»",
    ]  # fmt: skip
    parts = [rng.choice(vocabulary) for _ in range(rng.randint(0, 3000))]
    return "".join(p + rng.choice([" ", " ", "", "  "]) for p in parts)


@pytest.mark.parametrize("seed", range(12))
def test_invariants_hold_on_random_text(seed: int) -> None:
    rng = random.Random(seed)
    text = random_text(rng)
    size = rng.randint(2, 300)
    overlap = rng.randint(0, size - 1)

    pieces = split(text, size=size, overlap=overlap)

    check_invariants(text, pieces, size)
    assert (pieces == []) == (re.search(r"\S", text) is None)
