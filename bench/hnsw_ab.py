"""Two HNSW settings side by side, their queries alternated: recall@10 and latency in one run.

    .venv/bin/python bench/hnsw_ab.py [--quick] [--settings 16:128@600,32:128@300] [--rounds N]

hnsw_params.py builds one index after another and times each sweep in turn, so on a
machine shared with others its latencies compare different moments. Here the corpus of
retrieval_search.py (100,000 chunks of 384 dimensions; `--quick`: 10,000) is loaded once
on a throwaway server and copied into one table per (m, ef_construction) (`id,
embedding`, the embedding in the row as the chunk table stores it), each with its HNSW
index (`maintenance_work_mem = 1GB` in the building session). Then every short query of
retrieval_search.py (200; `--quick`: 100) runs against each setting's table with its
`ef_search` (`set_config('hnsw.ef_search', …, true)` in its transaction, as search() sets
it), one after the other, the order flipped each query, for `--rounds` rounds (default 3)
after 20 warm-up queries: `ORDER BY embedding <=> q LIMIT 10`, its execute and fetch
timed. Recall@10 is against the exact top-10 computed before any index exists. Prints
figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from common import Database, machine, percentile, prepare, table
from hnsw_params import load
from retrieval_search import BUILD_SETTINGS, DIM, TOP_K, generate, queries

WARMUP = 20


@dataclass
class Setting:
    m: int
    ef_construction: int
    ef_search: int
    build_seconds: float = 0.0
    times: list[float] = field(default_factory=list)  # ms, every timed query
    hits: int = 0
    expected: int = 0

    @property
    def table(self) -> str:
        return f"ab_m{self.m}_ef{self.ef_construction}"

    @property
    def label(self) -> str:
        return f"m {self.m}, ef_construction {self.ef_construction}, ef_search {self.ef_search}"


def parse(text: str) -> list[Setting]:
    settings = []
    for item in text.split(","):
        params, _, ef = item.partition("@")
        m, _, ef_construction = params.partition(":")
        settings.append(Setting(int(m), int(ef_construction), int(ef)))
    return settings


def build(db: Database, setting: Setting) -> None:
    with db.connect(db.name) as conn:
        for name, value in BUILD_SETTINGS.items():
            conn.execute(f"SET {name} = '{value}'")
        conn.execute(f"DROP TABLE IF EXISTS {setting.table}")
        # The table's name is made of the setting's numbers.
        copy = f"CREATE TABLE {setting.table} AS SELECT id, embedding FROM retrieval_chunk"  # noqa: S608
        conn.execute(copy)
        conn.execute("CHECKPOINT")
        started = time.perf_counter()
        conn.execute(
            f"CREATE INDEX ON {setting.table} USING hnsw (embedding vector_cosine_ops)"
            f" WITH (m = {setting.m}, ef_construction = {setting.ef_construction})"
        )
        setting.build_seconds = time.perf_counter() - started
        conn.execute(f"VACUUM ANALYZE {setting.table}")


def nearest(conn: Any, relation: str, vector: str, ef: int | None) -> tuple[list[int], float]:
    statement = f"SELECT id FROM {relation} ORDER BY embedding <=> %s::vector LIMIT {TOP_K}"  # noqa: S608 - our own table
    with conn.transaction():
        if ef is None:
            conn.execute("SET LOCAL enable_indexscan = off")
        else:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
        started = time.perf_counter()
        rows = conn.execute(statement, [vector]).fetchall()
        return [row[0] for row in rows], (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--settings", default="16:128@600,32:128@300")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    settings = parse(args.settings)
    os.environ["EMBEDDING_PROVIDER"] = "local"
    os.environ["EMBEDDING_DIM"] = str(DIM)
    print(machine(), flush=True)
    vocab, specs, rows = generate(200 if args.quick else 2000)
    db = prepare("private")
    try:
        load(db, specs, rows)
        del rows
        from retrieval.indexing import document_embedder

        embedder = document_embedder()
        vectors = [
            "[" + ",".join(map(str, embedder.embed([q.text])[0])) + "]"
            for q in queries(vocab, 100 if args.quick else 200)
        ]
        with db.connect(db.name) as conn:
            exact = [nearest(conn, "retrieval_chunk", v, None)[0] for v in vectors]
        built: dict[str, float] = {}
        for setting in settings:  # one table for the ef_searches of one (m, ef_construction)
            if setting.table not in built:
                build(db, setting)
                built[setting.table] = setting.build_seconds
                print(f"{setting.label}: built in {setting.build_seconds:.1f} s", flush=True)
            setting.build_seconds = built[setting.table]
        with db.connect(db.name) as conn:
            conn.autocommit = False
            for vector in vectors[:WARMUP]:
                for setting in settings:
                    nearest(conn, setting.table, vector, setting.ef_search)
            for round_ in range(args.rounds):
                for number, (vector, truth) in enumerate(zip(vectors, exact, strict=True)):
                    order = settings if number % 2 == 0 else list(reversed(settings))
                    for setting in order:
                        ids, ms = nearest(conn, setting.table, vector, setting.ef_search)
                        setting.times.append(ms)
                        if round_ == 0:
                            setting.hits += len(set(ids) & set(truth))
                            setting.expected += len(truth)
                print(f"round {round_ + 1} done; {machine()}", flush=True)
        base = settings[-1]
        print()
        print(
            table(
                ["setting", "build s", "recall@10", "p50 ms", "p95 ms", "p99 ms", "p50 / last's"],
                [
                    [
                        s.label,
                        f"{s.build_seconds:.1f}",
                        f"{s.hits / s.expected:.3f}",
                        f"{statistics.median(s.times):.1f}",
                        f"{percentile(s.times, 95):.1f}",
                        f"{percentile(s.times, 99):.1f}",
                        f"{statistics.median(s.times) / statistics.median(base.times):.2f}",
                    ]
                    for s in settings
                ],
            )
        )
        print(
            f"({len(vectors)} short queries x {args.rounds} rounds per setting, alternated; "
            "the statement's execute and fetch, no search() around it)"
        )
    finally:
        db.close()
        print(f"done; {machine()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
