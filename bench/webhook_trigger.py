"""What the run-end trigger of the webhooks (agents/migrations/0015_webhooks.py) costs the
statement that ends a run.

    .venv/bin/python bench/webhook_trigger.py [--quick] [--rounds N] [--db private|shared]

Each variant ends the same number of runs (2,000; `--quick`: 300), each with one UPDATE in
its own transaction (autocommit), as a run's end is one statement: status, end time,
latency, output, lease cleared.

- `no trigger`: the trigger disabled (`ALTER TABLE … DISABLE TRIGGER`): the end statement
  as it was before webhooks.
- `trigger, no webhook`: the common case: the agent has no webhook, the run none; the
  trigger looks and inserts nothing.
- `trigger, 1 webhook`: the agent has one webhook: each end also inserts its delivery.

The variants take turns, 50 ends at a time (the trigger off for `no trigger` with
`session_replication_role = replica`), so a load that comes and goes on a shared machine
falls on each alike; each round (`--rounds`, default 3) sums each variant's time, and the
figures are the medians over the rounds. Prints figures; asserts nothing about time.
Exits 1 if a round made other deliveries than one per run with a webhook.
"""

from __future__ import annotations

import statistics
import sys
import time

from common import ONE_TOOL_CONFIG, arguments, machine, prepare, table

VARIANTS = ("no trigger", "trigger, no webhook", "trigger, 1 webhook")
BATCH = 50
END = (
    "UPDATE agents_run SET status = 'completed', completed_at = now(), latency_ms = 5,"
    " output = '\"bench\"'::jsonb, lease_until = NULL WHERE id = %s"
)


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    db = prepare(args.db)
    try:
        return measure(300 if args.quick else 2000, args.rounds)
    finally:
        db.close()
        print(f"done; {machine()}")


def measure(count: int, rounds: int) -> int:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.models import AgentWebhook, Environment, Run, WebhookDelivery
    from agents.services.agents import agent_create

    admin, _ = get_user_model().objects.get_or_create(
        username="bench-admin", defaults={"is_superuser": True, "is_staff": True}
    )
    env = Environment.objects.get(name=DEFAULT_ENVIRONMENT)
    agents = {}
    for variant in VARIANTS:
        agent, _ = agent_create(
            user=admin,
            environment=env,
            name=f"bench-hooks-{VARIANTS.index(variant)}-{time.time_ns()}",
            agent_type="tool",
            config=ONE_TOOL_CONFIG,
        )
        agents[variant] = agent
    AgentWebhook.objects.create(
        agent=agents["trigger, 1 webhook"], url="http://127.0.0.1:9/hook", events=["run.completed"]
    )
    print(f"{count} run ends per variant, one UPDATE each, in batches of {BATCH}; {rounds} rounds")
    figures: dict[str, list[float]] = {v: [] for v in VARIANTS}
    ok = True
    for number in range(rounds):
        before = WebhookDelivery.objects.count()
        pending = {}
        for variant in VARIANTS:
            agent = agents[variant]
            version = agent.versions.get()
            runs = Run.objects.bulk_create(
                Run(agent=agent, version=version, caller=admin, protocol="bench")
                for _ in range(count)
            )
            pending[variant] = [run.pk for run in runs]
        spent = dict.fromkeys(VARIANTS, 0.0)
        with connection.cursor() as cursor:
            for batch in range(0, count, BATCH):
                # Batch by batch, the variants in turn: a load that comes and goes on a
                # shared machine falls on each alike.
                order = VARIANTS if (batch // BATCH) % 2 == 0 else tuple(reversed(VARIANTS))
                for variant in order:
                    # replica: this session fires no ordinary trigger (the bench is superuser).
                    role = "replica" if variant == "no trigger" else "origin"
                    cursor.execute(f"SET session_replication_role = {role}")
                    started = time.perf_counter()
                    for run_id in pending[variant][batch : batch + BATCH]:
                        cursor.execute(END, [run_id])
                    spent[variant] += time.perf_counter() - started
            cursor.execute("SET session_replication_role = origin")
        made = WebhookDelivery.objects.count() - before
        if made != count:  # one per run of the agent with a webhook, none for the others
            print(f"{made} deliveries made, expected {count}", file=sys.stderr)
            ok = False
        for variant in VARIANTS:
            figures[variant].append(spent[variant])
        print(f"round {number + 1} done; {machine()}")
    WebhookDelivery.objects.filter(run__protocol="bench").delete()
    Run.objects.filter(protocol="bench").delete()
    base = statistics.median(figures[VARIANTS[0]])
    rows = []
    for variant in VARIANTS:
        wall = statistics.median(figures[variant])
        rows.append(
            [
                variant,
                f"{wall / count * 1000:.3f}",
                f"{count / wall:.0f}",
                f"{wall / base:.2f}",
                " / ".join(f"{w / count * 1000:.3f}" for w in figures[variant]),
            ]
        )
    print()
    print(table(["variant", "ms per end", "ends/s", "× no trigger", "rounds (ms)"], rows))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
