from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Lower, Now
from django.utils import timezone
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

from agentbuilder.fields import OrderedJSONField
from agents.webhooks.events import WebhookEvent

NAME_PATTERN = r"^[A-Za-z0-9._-]{1,100}$"

# READ, CREATE, EDIT, INVOKE, DELETE, AUDIT and APPROVE on agents. Environments carry the same
# codenames so a grant on an environment (guardian keys permissions by content type) covers
# its agents. The names lead with the API's word, so the admin shows READ, not only "view".
AGENT_SCOPE_PERMISSIONS: list[tuple[str, str | Any]] = [
    ("view_agent", "READ agents in this environment"),
    ("add_agent", "CREATE agents in this environment"),
    ("change_agent", "EDIT agents in this environment"),
    ("invoke_agent", "INVOKE agents in this environment"),
    ("delete_agent", "DELETE agents in this environment"),
    ("audit_agent", "AUDIT: read every caller's runs of agents in this environment"),
    ("approve_agent", "APPROVE: decide the tool calls that wait for approval in this environment"),
]
AGENT_PERMISSIONS: list[tuple[str, str | Any]] = [
    ("view_agent", "READ: Can view agent"),
    ("add_agent", "CREATE: Can add agent"),
    ("change_agent", "EDIT: Can change agent"),
    ("invoke_agent", "INVOKE: Can invoke agent"),
    ("delete_agent", "DELETE: Can delete agent"),
    ("audit_agent", "AUDIT: Can read every caller's runs of agent"),
    ("approve_agent", "APPROVE: Can decide the tool calls of agent that wait for approval"),
]


class AgentType(models.TextChoices):
    TOOL = "tool", "Tool agent"
    RAG = "rag", "RAG agent"
    TASK = "task", "Task agent"


class Environment(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # What signs its webhooks (whsec_…), encrypted as MCP server headers are
    # (agents.webhooks.secret); made when first needed, shown only when made.
    webhook_secret_encrypted = models.TextField(blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        permissions = AGENT_SCOPE_PERMISSIONS
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="environment_name_ci_unique",
                violation_error_message="An environment with this name already exists.",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Agent(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    environment = models.ForeignKey(Environment, on_delete=models.PROTECT, related_name="agents")
    name = models.CharField(max_length=100)
    display_name = models.CharField(max_length=200, blank=True)
    description = models.CharField(max_length=200, blank=True)
    agent_type = models.CharField(max_length=10, choices=AgentType.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    modified_at = models.DateTimeField(auto_now=True)
    modified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Soft delete: the row (and its runs) stay for audit; the name becomes free again.
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["name"]
        # Declared, not Django's defaults, so that their names carry the API's words.
        default_permissions = ()
        permissions = AGENT_PERMISSIONS
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                "environment",
                condition=models.Q(deleted_at__isnull=True),
                name="agent_name_ci_unique_per_environment",
            ),
            models.CheckConstraint(
                condition=models.Q(name__regex=NAME_PATTERN), name="agent_name_format"
            ),
            models.CheckConstraint(
                condition=models.Q(agent_type__in=AgentType.values), name="agent_type_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def status(self) -> str:
        return "deleted" if self.deleted_at else "active"


class AgentVersion(models.Model):
    """An immutable config snapshot; a database trigger (migration 0002) refuses UPDATEs."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    version_label = models.CharField(max_length=100, blank=True)
    notes = models.TextField(blank=True)
    # What runs read: the config validated, every default filled in.
    config = OrderedJSONField()
    # What people read (the admin, the API's echo, exports): the config as its author sent
    # it, their keys in their order and no default they did not write. Null on versions
    # saved before it was kept (migration 0027), which show `config`.
    config_as_written = OrderedJSONField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["agent", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="version_number_unique"),
            models.UniqueConstraint(
                fields=["agent", "version_label"],
                condition=~models.Q(version_label=""),
                name="version_label_unique",
            ),
            models.CheckConstraint(
                condition=models.Q(number__gte=1), name="version_number_positive"
            ),
        ]

    def __str__(self) -> str:
        label = f" ({self.version_label})" if self.version_label else ""
        return f"{self.agent.name} v{self.number}{label}"

    @property
    def config_shown(self) -> Any:
        """The config as people read it: as written, where it was kept."""
        return self.config if self.config_as_written is None else self.config_as_written


# Alias names (docs/api.md#aliases). `latest` names the newest version and `history` the route
# of an agent's alias changes, so neither can name an alias; both ignore case, as names do.
ALIAS_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,49}$"
RESERVED_ALIASES = ("latest", "history")


class VersionAlias(models.Model):
    """A named pointer (`prod`, `staging`) to a version of an agent. Names ignore case: `Prod`
    and `prod` are one alias, spelled as it was first set."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="aliases")
    name = models.CharField(max_length=50)
    version = models.ForeignKey(AgentVersion, on_delete=models.CASCADE, related_name="aliases")
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["agent", "name"]
        verbose_name_plural = "version aliases"
        constraints = [
            models.UniqueConstraint(Lower("name"), "agent", name="alias_name_ci_unique_per_agent"),
            models.CheckConstraint(
                condition=models.Q(name__regex=ALIAS_PATTERN), name="alias_name_format"
            ),
            models.CheckConstraint(
                condition=~models.Q(name__iregex=rf"^({'|'.join(RESERVED_ALIASES)})$"),
                name="alias_name_not_reserved",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} → v{self.version.number}"


class AliasChange(models.Model):
    """One change of an alias, kept for good: set (no `from_version`), moved, or deleted (no
    `to_version`). A database trigger (migration 0011) refuses to rewrite a row."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="alias_changes")
    name = models.CharField(max_length=50)
    from_version = models.ForeignKey(
        AgentVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    to_version = models.ForeignKey(
        AgentVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    changed_at = models.DateTimeField(default=timezone.now)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # A gated alias's move (agents.evals.gates): the experiment that allowed it, or, forced
    # past its gate by an AUDIT holder, why.
    # Kept while the history names it (the history is append-only: migration 0011).
    experiment = models.ForeignKey(
        "Experiment", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    forced_reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-changed_at", "-id"]
        indexes = [models.Index(fields=["agent", "-changed_at"], name="alias_change_agent_recent")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(from_version__isnull=False) | models.Q(to_version__isnull=False),
                name="alias_change_names_a_version",
            ),
        ]

    def __str__(self) -> str:
        before = f"v{self.from_version.number}" if self.from_version else "—"
        after = f"v{self.to_version.number}" if self.to_version else "—"
        return f"{self.name}: {before} → {after}"


class Provider(models.TextChoices):
    BEDROCK = "bedrock", "AWS Bedrock"
    OPENAI = "openai", "OpenAI-compatible"
    LOCAL = "local", "Offline model"


# USD per million tokens: the dearest models listed cost tens of dollars; a thousand is
# a typo (a price per token, or in cents) that would make every budget trip at once.
PRICE_RANGE = [MinValueValidator(Decimal(0)), MaxValueValidator(Decimal(1000))]


class LLMModel(models.Model):
    """The model catalog: which `llmModelId`s a config may name and who serves them."""

    id = models.CharField(primary_key=True, max_length=200)
    name = models.CharField(max_length=200)
    provider = models.CharField(max_length=20, choices=Provider.choices)
    agent_types = ArrayField(models.CharField(max_length=10, choices=AgentType.choices))
    capabilities = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    enabled = models.BooleanField(default=True)
    # US dollars per million tokens; None: unknown, and a run's cost with it.
    input_usd_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, validators=PRICE_RANGE
    )
    output_usd_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, validators=PRICE_RANGE
    )
    # Input tokens read from the provider's prompt cache; None: billed as other input.
    cached_input_usd_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, validators=PRICE_RANGE
    )
    # When the prices were taken from the provider's list (they change; say how old).
    prices_as_of = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["provider", "id"]
        verbose_name = "LLM model"

    def __str__(self) -> str:
        return self.id


# Rate limits (agents.access.rate_limits, docs/api.md#rate-limits): a positive count, or
# none. The ceiling keeps a typo (a limit of 10^12) from reading as "no limit" by accident.
MAX_RATE_LIMIT = 10**9
RPM_HELP = "Requests a minute to /v1, all routes together; empty: no limit."
TPM_HELP = "Model tokens a minute of its runs; past it, new runs wait. Empty: no limit."


def rate_limit_checks(prefix: str) -> list[models.BaseConstraint]:
    """The bounds again in the database, for a row that skips the forms' validators."""
    return [
        models.CheckConstraint(
            condition=models.Q(**{f"{field}__isnull": True})
            | models.Q(**{f"{field}__gte": 1, f"{field}__lte": MAX_RATE_LIMIT}),
            name=f"{prefix}_{field}_bounds",
        )
        for field in ("requests_per_minute", "tokens_per_minute")
    ]


def rate_limit_field(help_text: str) -> models.PositiveIntegerField[int | None, int | None]:
    return models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_RATE_LIMIT)],
        help_text=help_text,
    )


class UserLimits(models.Model):
    """A person's rate limits (an API client carries its own): read with the user on every
    request by agents.access.tokens, so a caller without a row costs nothing."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="rate_limits",
    )
    requests_per_minute = rate_limit_field(RPM_HELP)
    tokens_per_minute = rate_limit_field(TPM_HELP)

    class Meta:
        verbose_name = "rate limits"
        verbose_name_plural = "rate limits"
        constraints = rate_limit_checks("user_limits")

    def __str__(self) -> str:
        return f"rate limits of user {self.user_id}"


class RateWindow(models.Model):
    """What one caller has spent in one minute (agents.access.rate_limits' PostgreSQL
    counter): one upsert a request, the minutes before pruned at each new one."""

    id = models.BigAutoField(primary_key=True)
    key = models.CharField(max_length=100)
    minute = models.BigIntegerField()  # Unix time // 60
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "minute"], name="rate_window_once")]

    def __str__(self) -> str:
        return f"{self.key} @ minute {self.minute}: {self.count}"


class APIClient(models.Model):
    """A machine caller: client credentials bound to a service user and an environment."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    client_id = models.CharField(max_length=64, unique=True, editable=False)
    secret_hash = models.CharField(max_length=256, editable=False)
    service_user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_client"
    )
    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="clients")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    requests_per_minute = rate_limit_field(RPM_HELP)
    tokens_per_minute = rate_limit_field(TPM_HELP)

    class Meta:
        ordering = ["name"]
        verbose_name = "API client"
        constraints = rate_limit_checks("api_client")

    def __str__(self) -> str:
        return f"{self.name} ({self.client_id})"


class SsoIdentity(models.Model):
    """The account at the identity provider a user signs in with (agents.access.sso): the
    issuer and its `sub` claim, which never changes, unlike a user name or an email."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "SSO identity"
        verbose_name_plural = "SSO identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class RunStatus(models.TextChoices):
    # A background run waiting for a worker (agents.runs.background); it holds no process.
    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    # A tool call waits for a person's decision (agents.runs.approvals); it holds no
    # process, and ends only by a decision (which resumes it) or by expiry.
    AWAITING_APPROVAL = "awaiting_approval"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"


# A run in one of these has ended: its row and events change no more.
RUN_ENDED = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELED})


class Run(models.Model):
    """One invocation of an agent version, on any protocol."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="runs")
    version = models.ForeignKey(AgentVersion, on_delete=models.CASCADE, related_name="runs")
    caller = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    protocol = models.CharField(max_length=30)
    status = models.CharField(
        max_length=20, choices=RunStatus.choices, default=RunStatus.IN_PROGRESS, db_index=True
    )
    response_id = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(auto_now_add=True, db_index=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    tokens_usage = models.JSONField(default=dict, blank=True)
    thread_id = models.CharField(max_length=100, blank=True, db_index=True)
    # The W3C trace id of its trace (32 hex digits; agents.telemetry): the caller's from
    # its `traceparent`, else a new one. Exported or not, logs and answers carry it.
    trace_id = models.CharField(max_length=32, blank=True, editable=False)
    messages = models.JSONField(default=list, blank=True)
    output = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    # What the run did, in order (the run steps of docs/api.md#run-steps), written with its end.
    steps = models.JSONField(default=list, blank=True)
    # What its model calls cost (USD; None when a model that was used has no price), and
    # their usage and cost by model, {model: {input_tokens, …, cost_usd}}: from the steps,
    # with the run's end, so that usage reports add rows instead of reading traces.
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    models_usage = models.JSONField(default=dict, blank=True)
    # While in progress: the process running it renews this lease; once it has run out,
    # that process is gone and any other marks the run `failed` (`interrupted`).
    lease_until = models.DateTimeField(null=True, blank=True, editable=False)
    # Set by a cancel from any process (agents.runs.live.run_cancel); the process running
    # the run sees it within a poll and ends the run `canceled`.
    cancel_requested_at = models.DateTimeField(null=True, blank=True, editable=False)
    # A background run: when it was queued (its `started_at` is when a worker took it), and
    # the request it runs, kept until a worker claims it (agents.runs.background).
    queued_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The id the client gave the request that started the run (MCP's JSON-RPC id), so that
    # its cancel (`notifications/cancelled`) finds the run from any process.
    client_request_id = models.CharField(max_length=100, blank=True, editable=False)
    request = models.JSONField(null=True, blank=True, editable=False)
    # The schedule whose tick started it (protocol `schedule`, agents.schedules).
    schedule = models.ForeignKey(
        "Schedule",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="runs",
        editable=False,
    )
    # The request's own webhook, {"url", "events"} (agents.webhooks): its deliveries are
    # made with the run's end, whatever ends it (a trigger, docs/architecture.md#webhooks).
    webhook = models.JSONField(null=True, blank=True, editable=False)
    # While `awaiting_approval`: the paused turn a decision resumes and the request it was
    # made with (agents.runs.approvals); its deadline is `lease_until`.
    paused = models.JSONField(null=True, blank=True, editable=False)
    # The unsaved config the run ran instead of its version's (the playground's "Try without
    # saving"): no version holds it, so the run keeps it; `version` is the one it started from.
    draft_config = models.JSONField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["agent", "-started_at"], name="run_agent_recent")]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"


class RunUsage(Run):
    """The admin's usage page (agents/admin/usage.py) as an entry of the admin's app list:
    what runs spent, added up. A proxy: no table of its own."""

    class Meta:
        proxy = True
        verbose_name = verbose_name_plural = "usage"


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class ApprovalRequest(models.Model):
    """A tool call a run waits on until a person decides it (docs/api.md#tool-approvals):
    decided once, by the run's caller or an APPROVE holder."""

    id = models.UUIDField(primary_key=True, editable=False)  # the runtime's approvalRequestId
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approval_requests")
    call_id = models.CharField(max_length=200)
    tool = models.CharField(max_length=200)
    arguments = models.TextField()
    status = models.CharField(
        max_length=10, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["-created_at"],
                name="approval_pending_recent",
                condition=models.Q(status="pending"),
            )
        ]

    def __str__(self) -> str:
        return f"approval of {self.tool} ({self.status})"


class RunEvent(models.Model):
    """One event of a run (agents.runtime.events), in the order the run produced it, as
    agents.runs.event_codec writes it: what a follower in any process replays
    (agents.runs.event_log)."""

    id = models.BigAutoField(primary_key=True)
    # Indexed by the constraint below, which starts with it.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_index=False)
    index = models.PositiveIntegerField()  # from 0, the run's n-th event
    event = models.JSONField()

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="run_event_run_index_unique")
        ]

    def __str__(self) -> str:
        return f"event {self.index} of run {self.run_id}"


class McpTransport(models.TextChoices):
    STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
    SSE = "sse", "SSE (older servers)"


class McpServer(models.Model):
    """An MCP server registered for one environment, or for all (no environment).

    Header values (API keys, tokens) are stored encrypted (`agents.mcp_registry.secrets`); their
    names are kept in clear so lists and the admin can show them without the key.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    environment = models.ForeignKey(
        Environment, null=True, blank=True, on_delete=models.CASCADE, related_name="mcp_servers"
    )
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=200, blank=True)
    url = models.URLField(max_length=2000)
    transport = models.CharField(
        max_length=20, choices=McpTransport.choices, default=McpTransport.STREAMABLE_HTTP
    )
    header_names = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    headers_encrypted = models.TextField(blank=True, editable=False)
    timeout = models.FloatField(default=30.0, help_text="Seconds for one listing or call.")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    modified_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                "environment",
                condition=models.Q(environment__isnull=False),
                name="mcp_server_name_ci_unique_per_environment",
            ),
            models.UniqueConstraint(
                Lower("name"),
                condition=models.Q(environment__isnull=True),
                name="mcp_server_name_ci_unique_global",
            ),
            models.CheckConstraint(
                condition=models.Q(name__regex=NAME_PATTERN), name="mcp_server_name_format"
            ),
            models.CheckConstraint(
                condition=models.Q(transport__in=McpTransport.values),
                name="mcp_server_transport_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(timeout__gt=0, timeout__lte=300), name="mcp_server_timeout"
            ),
        ]

    def __str__(self) -> str:
        return self.name


_now = timezone.now  # for Schedule, whose `timezone` field hides the module in its body


class Schedule(models.Model):
    """A cron on which an agent's version runs in the background as the schedule's owner
    (agents.schedules, docs/api.md#schedules). Celery beat reads its PeriodicTask, which the
    schedule services keep in step with it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="schedules")
    # Whose runs its ticks start: who created it, or who last changed what it runs.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    cron = models.CharField(max_length=200, help_text="minute hour day-of-month month weekday")
    timezone = models.CharField(max_length=64, default="UTC", help_text="IANA name: Europe/Paris")
    version = models.CharField(
        max_length=100, default="latest", help_text="latest, a number or an alias"
    )
    input = models.JSONField(help_text='{"messages": [...]} or {"inputs": {...}}')
    webhook = models.JSONField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        on_delete=models.PROTECT,
        related_name="agent_schedule",
        editable=False,
    )
    # Ticks at or before this instant are done (fired, or before the schedule was saved or
    # resumed): a tick beat sends twice, or a missed one sent late, starts one run at most.
    tick_after = models.DateTimeField(default=_now, editable=False)
    last_fired_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Why the last tick started no run (`{code, message}`), null when it did.
    last_error = models.JSONField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.cron} ({self.timezone})"


# guardian: object permissions in tables with real foreign keys (indexed joins, cascades)
# instead of its generic text-keyed table.
class EnvironmentUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(Environment, on_delete=models.CASCADE)


class EnvironmentGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Environment, on_delete=models.CASCADE)


class AgentUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(Agent, on_delete=models.CASCADE)


class AgentGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Agent, on_delete=models.CASCADE)


# The events a webhook may name (agents.webhooks.events), as the columns' choices.
WEBHOOK_EVENT_CHOICES = [(str(e), str(e)) for e in WebhookEvent]


class AgentWebhook(models.Model):
    """A URL that receives the events of every run of an agent."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    events = ArrayField(models.CharField(max_length=40, choices=WEBHOOK_EVENT_CHOICES))
    description = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.url


class PushConfig(models.Model):
    """An A2A push-notification config of one task (a run): its updates are delivered to
    `url` as webhooks are, in the A2A dialect the config was set in."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="push_configs")
    config_id = models.CharField(max_length=200)
    url = models.URLField(max_length=2000)
    dialect = models.CharField(max_length=10)  # agents.protocols.a2a.dialects.Dialect
    # The config's token and authentication, as headers of each delivery, encrypted.
    headers_encrypted = models.TextField(blank=True, editable=False)
    authentication = models.JSONField(null=True, blank=True)  # schemes, without credentials
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "config_id"], name="push_config_id_per_run")
        ]

    def __str__(self) -> str:
        return f"{self.config_id} ({self.url})"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"  # retried for WEBHOOK_RETRY_SECONDS, in vain


class DeliveryFormat(models.TextChoices):
    STANDARD = "standard"  # {"type", "timestamp", "data"} (docs/api.md#webhooks)
    A2A_V1 = "a2a-1.0"  # a StreamResponse, as A2A 1.0 pushes
    A2A_V03 = "a2a-0.3"  # the Task, as A2A 0.3 pushes


class WebhookDelivery(models.Model):
    """One event for one endpoint, sent until it is answered 2xx or WEBHOOK_RETRY_SECONDS
    have passed (agents.webhooks.delivery). Made by the database with the run's end
    (docs/architecture.md#webhooks); its id, from `key`, is the `webhook-id` every attempt
    carries, so a receiver tells a retry from a new event."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    key = models.CharField(max_length=200, unique=True)  # run : event : endpoint
    environment = models.ForeignKey(
        Environment, on_delete=models.CASCADE, related_name="webhook_deliveries"
    )
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.CASCADE, related_name="webhook_deliveries"
    )
    agent_webhook = models.ForeignKey(
        AgentWebhook, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    push_config = models.ForeignKey(
        PushConfig, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    event = models.CharField(max_length=40, choices=WEBHOOK_EVENT_CHOICES)
    format = models.CharField(max_length=10, choices=DeliveryFormat.choices)
    url = models.URLField(max_length=2000)
    headers_encrypted = models.TextField(blank=True, editable=False)
    # Fixed at its first attempt; `json`, so every attempt sends its keys in one order.
    payload = OrderedJSONField(null=True, blank=True)
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    # Due then (pending); while an attempt is under way, when it may be taken for lost.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_response = models.TextField(blank=True)  # its first WEBHOOK_EXCERPT_CHARS
    last_error = models.TextField(blank=True)
    history = models.JSONField(default=list, blank=True)  # [{at, statusCode, error}]
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                name="webhook_delivery_due",
                condition=models.Q(status="pending"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.url} ({self.status})"


# ---------------------------------------------------------------- evaluations
# Datasets, experiments and gated aliases (docs/api.md#evaluations, agents.evals).


class RunFeedback(models.Model):
    """A person's thumbs up (1) or down (-1) on a run, with a comment: one per person."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    score = models.SmallIntegerField()
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "user"], name="run_feedback_one_per_user"),
            models.CheckConstraint(
                condition=models.Q(score__in=(1, -1)), name="run_feedback_score_thumb"
            ),
        ]

    def __str__(self) -> str:
        return f"{'+1' if self.score > 0 else '-1'} on run {self.run_id}"


class Dataset(models.Model):
    """Cases to run an agent of `agent_type` on. Every change of its cases makes a new
    revision (`revision`); cases are never rewritten, so a revision's cases stay what an
    experiment ran."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    environment = models.ForeignKey(Environment, on_delete=models.PROTECT, related_name="datasets")
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    agent_type = models.CharField(max_length=10, choices=AgentType.choices)
    revision = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    modified_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                Lower("name"), "environment", name="dataset_name_ci_unique_per_environment"
            ),
            models.CheckConstraint(
                condition=models.Q(name__regex=NAME_PATTERN), name="dataset_name_format"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class DatasetCase(models.Model):
    """One case, in the revisions from `added_in` up to (not with) `removed_in`. Editing a
    case removes it and adds its new form, so both revisions keep theirs."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="cases")
    position = models.PositiveIntegerField()  # its place in the dataset, kept across edits
    input = models.JSONField()
    expected = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    added_in = models.PositiveIntegerField()
    removed_in = models.PositiveIntegerField(null=True, blank=True)
    source_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["dataset", "position", "added_in"]
        indexes = [models.Index(fields=["dataset", "added_in"], name="dataset_case_revision")]

    def __str__(self) -> str:
        return f"case {self.position} of {self.dataset_id}"


class ExperimentStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"


EXPERIMENT_ENDED = frozenset(
    {ExperimentStatus.COMPLETED, ExperimentStatus.FAILED, ExperimentStatus.CANCELED}
)


class Experiment(models.Model):
    """A version run on every case of a dataset's revision (`repetitions` times each) by
    its requester, through the run path, and scored (agents.evals.runner)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="experiments")
    version = models.ForeignKey(AgentVersion, on_delete=models.CASCADE, related_name="+")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="experiments")
    revision = models.PositiveIntegerField()
    scorers = models.JSONField()  # as checked: [{"name", ...options}]
    scorers_key = models.CharField(max_length=64)  # their digest: a gate reuses alike runs
    repetitions = models.PositiveSmallIntegerField(default=1)
    concurrency = models.PositiveSmallIntegerField(default=4)
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(
        max_length=10, choices=ExperimentStatus.choices, default=ExperimentStatus.QUEUED
    )
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    summary = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # While queued or running: until when its slots are trusted to be at work; past it, any
    # live process hands the experiment to workers again (agents.evals.runner).
    lease_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["agent", "-created_at"], name="experiment_agent_recent")]

    def __str__(self) -> str:
        return f"experiment {self.pk} ({self.status})"


class ResultStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SCORED = "scored"
    CANCELED = "canceled"


class ExperimentResult(models.Model):
    """One case's run in an experiment (one of its repetitions), and its scores."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="results")
    case = models.ForeignKey(DatasetCase, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()  # the case's, so results list in its order
    repetition = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(
        max_length=10, choices=ResultStatus.choices, default=ResultStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True, editable=False)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    answer = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list, blank=True)  # [{"name", "arguments"}]
    scores = models.JSONField(default=dict, blank=True)  # {scorer: {score, passed, reason}}
    passed = models.BooleanField(null=True, blank=True)  # every applicable scorer passed
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    tokens_usage = models.JSONField(default=dict, blank=True)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    error = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["experiment", "position", "repetition"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "case", "repetition"], name="experiment_result_once"
            )
        ]
        indexes = [
            models.Index(
                fields=["experiment", "id"],
                name="experiment_result_pending",
                condition=models.Q(status="pending"),
            )
        ]

    def __str__(self) -> str:
        return f"case {self.position} #{self.repetition} of {self.experiment_id} ({self.status})"


class AliasGate(models.Model):
    """What an alias's version must pass on a dataset before the alias moves to it."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="alias_gates")
    name = models.CharField(max_length=50)  # the alias's, set or not yet
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="gates")
    scorers = models.JSONField()
    thresholds = models.JSONField()  # {scorer: minimum mean score, 0–1}
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["agent", "name"]
        constraints = [
            models.UniqueConstraint(Lower("name"), "agent", name="alias_gate_one_per_alias"),
        ]

    def __str__(self) -> str:
        return f"gate of {self.name}"


# ---------------------------------------------------------------- budgets
# What a scope may spend in a period, and what it has spent (docs/api.md#budgets,
# agents.budgets).


class BudgetScope(models.TextChoices):
    ENVIRONMENT = "environment"  # every run in the environment
    AGENT = "agent"
    USER = "user"  # the runs a user calls, in the budget's environment
    API_CLIENT = "apiClient"  # the runs an API client calls (its service user's)


class BudgetPeriod(models.TextChoices):
    DAY = "day"  # from 00:00 UTC
    MONTH = "month"  # from the 1st, 00:00 UTC


class BudgetAction(models.TextChoices):
    BLOCK = "block"  # refuse runs (402) and stop them between model calls
    WARN = "warn"  # only warn, at 80 % and 100 %


class Budget(models.Model):
    """A limit on what a scope of an environment spends per period, in USD, tokens or both."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="budgets")
    scope = models.CharField(max_length=20, choices=BudgetScope.choices)
    # The scope's object (none for the environment itself): exactly the one its scope names.
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="budgets"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="budgets",
    )
    api_client = models.ForeignKey(
        APIClient, null=True, blank=True, on_delete=models.CASCADE, related_name="budgets"
    )
    period = models.CharField(max_length=10, choices=BudgetPeriod.choices)
    limit_usd = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    limit_tokens = models.BigIntegerField(null=True, blank=True)
    action = models.CharField(max_length=10, choices=BudgetAction.choices)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    modified_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["environment", "scope"], name="budget_by_environment")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(limit_usd__isnull=False) | models.Q(limit_tokens__isnull=False),
                name="budget_has_a_limit",
            ),
            models.CheckConstraint(
                condition=models.Q(limit_usd__isnull=True) | models.Q(limit_usd__gt=0),
                name="budget_usd_positive",
            ),
            models.CheckConstraint(
                condition=models.Q(limit_tokens__isnull=True) | models.Q(limit_tokens__gt=0),
                name="budget_tokens_positive",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(
                        scope="environment",
                        agent__isnull=True,
                        user__isnull=True,
                        api_client__isnull=True,
                    )
                    | models.Q(
                        scope="agent",
                        agent__isnull=False,
                        user__isnull=True,
                        api_client__isnull=True,
                    )
                    | models.Q(
                        scope="user",
                        agent__isnull=True,
                        user__isnull=False,
                        api_client__isnull=True,
                    )
                    | models.Q(
                        scope="apiClient",
                        agent__isnull=True,
                        user__isnull=True,
                        api_client__isnull=False,
                    )
                ),
                name="budget_scope_names_its_object",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope} budget per {self.period} ({self.action})"


class BudgetSpend(models.Model):
    """What a budget's scope spent in one period: charged after each model call by one
    atomic statement (agents.budgets.gate), so concurrent runs lose no charge; each warning
    is claimed by the one statement that sets its time."""

    id = models.BigAutoField(primary_key=True)
    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="spends")
    period_start = models.DateField()  # UTC
    spent_usd = models.DecimalField(max_digits=18, decimal_places=10, default=0)
    spent_tokens = models.BigIntegerField(default=0)
    # When the warning at 80 % and at 100 % was sent this period (null: not yet).
    warned_80_at = models.DateTimeField(null=True, blank=True)
    warned_100_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-period_start"]
        constraints = [
            models.UniqueConstraint(fields=["budget", "period_start"], name="budget_spend_period")
        ]

    def __str__(self) -> str:
        return f"{self.budget_id} from {self.period_start}"


class AuditSurface(models.TextChoices):
    API = "api"
    ADMIN = "admin"
    IMPORT = "import"  # the config files' importer (agents.config_files)
    OTHER = "other"  # a command or a task: no request, no importer


class AuditRecord(models.Model):
    """One change of an object SPEC 8 lists (agents.audit), kept for good: a database trigger
    (migration 0024) refuses to rewrite or remove a row, but for the actor's link cleared
    when its user is deleted (the name stays)."""

    id = models.BigAutoField(primary_key=True)
    # No database constraint, and Django leaves the row alone when the environment goes: a
    # cascade or SET_NULL would be a write the trigger refuses, and the id should outlive it.
    environment = models.ForeignKey(
        Environment,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=40)
    object_type = models.CharField(max_length=40)
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200, blank=True)
    # {field: {"from": …, "to": …}}; a secret's values are never written, only "changed".
    changes = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(db_default=Now())
    ip = models.GenericIPAddressField(null=True, blank=True)
    surface = models.CharField(max_length=10, choices=AuditSurface.choices)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["environment", "-at"], name="audit_environment_recent"),
            models.Index(fields=["object_type", "object_id"], name="audit_object"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_name or '—'} {self.action} {self.object_type} {self.object_repr}"
